package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

var uninstallCmd = &Command{
	Name:  "uninstall",
	Usage: "uninstall [--purge]",
	Short: "stop everything and remove bridgectl's runtime files (--purge: the whole state dir)",
	Long: `Stops the tunnel and the daemon and removes the pid files, logs, daemon.json,
tunnel.json and the disabled flag. --purge removes the whole state directory:
job snapshots, the approval queue, the audit log and a named tunnel's token.
The .env file and the binaries are never touched (delete them yourself). If
systemd user units are installed, it prints the commands to remove them.
Unfinished agent jobs end as interrupted, as with stop (they are named).`,
	Run: runUninstall,
}

func runUninstall(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	purge := f.Bool("purge", false, "also delete jobs, approvals, the audit log and the tunnel token")
	if _, err := f.parse(args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	if err := c.stopAll(ctx); err != nil {
		return err
	}
	if !c.dir.Exists() {
		fmt.Fprintf(e.Stdout, "nothing to remove: no state dir at %s\n", c.dir.Root)
	} else if *purge {
		if why := broadRoot(c.dir.Root, c.home()); why != "" {
			return fmt.Errorf("refused: the state directory %s is %s; delete what you mean by hand", c.dir.Root, why)
		}
		if foreign := c.foreignEntries(); len(foreign) > 0 {
			return fmt.Errorf("refused: the state directory %s also holds %s, which the bridge did not make (is BRIDGE_STATE_DIR pointing at the wrong place?); nothing was removed — move those out, or delete what you mean by hand", c.dir.Root, strings.Join(foreign, ", "))
		}
		if err := os.RemoveAll(c.dir.Root); err != nil {
			return fmt.Errorf("remove %s: %w", c.dir.Root, err)
		}
		fmt.Fprintf(e.Stdout, "removed the state directory %s\n", c.dir.Root)
	} else {
		for _, p := range []string{c.dir.PIDFile(), c.dir.LogFile(), c.dir.DaemonInfoFile(), c.dir.TunnelPIDFile(),
			c.dir.TunnelLogFile(), c.dir.TunnelInfoFile(), c.dir.DisabledFlag()} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		fmt.Fprintf(e.Stdout, "removed runtime files from %s (jobs, approvals, audit log and tunnel token kept; --purge removes them)\n", c.dir.Root)
	}
	fmt.Fprintf(e.Stdout, "kept %s and the binaries: delete them yourself if you want them gone\n", c.envPath)
	units := filepath.Join(c.home(), ".config", "systemd", "user")
	for _, u := range []string{"deepseek-bridge.service", "deepseek-bridge-tunnel.service"} {
		if _, err := os.Stat(filepath.Join(units, u)); err == nil {
			fmt.Fprintf(e.Stdout, "systemd unit installed: systemctl --user disable --now %s && rm %s\n", u, filepath.Join(units, u))
		}
	}
	return nil
}

// foreignEntries lists the top-level entries of the state dir that the bridge
// does not make (the .env file, a project's files, ...): --purge must never
// delete them with the bridge's state.
func (c *ctl) foreignEntries() []string {
	d := c.dir
	known := map[string]bool{}
	for _, p := range []string{d.Jobs(), d.Approvals(), d.HarnessRoot(), d.AuditLog(), d.Switches(),
		d.DisabledFlag(), d.PIDFile(), d.LogFile(), d.TunnelPIDFile(), d.TunnelLogFile(), d.TunnelTokenFile(),
		d.TunnelInfoFile(), d.DaemonInfoFile(), d.LockFile()} {
		known[filepath.Base(p)] = true
	}
	ents, _ := os.ReadDir(d.Root)
	var foreign []string
	for _, ent := range ents {
		n := ent.Name()
		switch {
		case known[n]:
		case strings.HasPrefix(n, "spend-") && strings.HasSuffix(n, ".json"): // statedir.SpendFile
		case strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp"): // an interrupted WriteFileAtomic
		default:
			foreign = append(foreign, n)
		}
	}
	return foreign
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

var uninstallCmd = &Command{
	Name:  "uninstall",
	Usage: "uninstall [--purge]",
	Short: "stop everything and remove bridgectl's runtime files (--purge: the whole state dir)",
	Long: `Stops the tunnel and the daemon and removes the pid files, logs, daemon.json,
tunnel.json and the disabled flag. --purge removes the whole state directory:
job snapshots, the approval queue, the audit log and a named tunnel's token.
The .env file and the binaries are never touched (delete them yourself). If
systemd user units are installed, it prints the commands to remove them.`,
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
	if *purge {
		if why := broadRoot(c.dir.Root, c.home()); why != "" {
			return fmt.Errorf("refused: the state directory %s is %s; delete what you mean by hand", c.dir.Root, why)
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

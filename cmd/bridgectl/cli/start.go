package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var startCmd = &Command{
	Name:  "start",
	Usage: "start [--foreground] [--for WHO]",
	Short: "start the daemon in the background and wait until /health answers",
	Long: `Runs ` + "`bridge serve --env FILE`" + ` in its own session with a pid file (<state>/bridge.pid)
and its output appended to <state>/bridge.log after a start marker line (the
daemon's own log goes to BRIDGE_LOG_FILE when that is set). It
returns once the daemon wrote <state>/daemon.json and GET /health answered: a
live pid alone is not proof of a live server.

Refuses when the daemon is already running or when ` + "`bridgectl disable`" + ` was run.
Preflight: a missing or short MCP_PATH_SECRET and a taken port fail; a missing
DEEPSEEK_API_KEY only warns (the daemon serves and each DeepSeek call explains it).

The bridge binary is BRIDGE_BIN, else ` + "`bridge`" + ` next to bridgectl, else on PATH.
--foreground replaces bridgectl with the daemon (for systemd or a terminal).
--for WHO names who asked for the start in the log's start marker (` + "`bridge stdio`" + `
passes itself when it starts the daemon for a host).`,
	Run: runStart,
}

// errDisabled is how start and restart refuse while the bridge is disabled.
var errDisabled = daemonctl.ErrDisabled

func runStart(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	fg := f.Bool("foreground", false, "run the daemon in this terminal instead of the background")
	forWho := f.String("for", "", "who asked for this start, for the log's start marker")
	if _, err := f.parse(args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	c.startedFor = *forWho
	ctl := c.control()
	if err := ctl.ReadyToStart(ctx); err != nil {
		return err
	}
	// Roots written by hand are not checked by `bridgectl allow`: say what
	// job admission will refuse in them.
	for _, root := range c.cfg.AllowedRoots {
		for _, h := range c.heldBy(root) {
			fmt.Fprintf(e.Stderr, "warning: allowed root %s\n", h.warning(root))
		}
	}
	if *fg {
		return c.startForeground()
	}
	// A tunnel that outlived its daemon (a crash, a kill) forwards to a fixed
	// port: come back on it, so the public URL keeps working.
	pin := ctl.PortForTunnel()
	st, err := c.startDaemon(ctx, daemonctl.StartOptions{PinPort: pin, JustFreed: pin > 0})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "started: pid %d, listening on http://%s\n", st.PID, st.Addr)
	fmt.Fprintf(e.Stdout, "endpoint: %s\n", localEndpoint(st.Addr, c.cfg.PathSecret))
	if lf := c.logFile(); lf != c.dir.LogFile() {
		fmt.Fprintf(e.Stdout, "log: %s (BRIDGE_LOG_FILE; output from before the daemon opened it is in %s)\n", lf, c.dir.LogFile())
	} else {
		fmt.Fprintf(e.Stdout, "log: %s\n", lf)
	}
	return nil
}

func (c *ctl) startForeground() error {
	ctl := c.control()
	if err := ctl.Preflight(c.cfg.Port, 0); err != nil {
		return err
	}
	bin, err := ctl.Bridge()
	if err != nil {
		return err
	}
	if err := c.createDir(); err != nil {
		return err
	}
	// The pid stays the same through exec, so the pid file names the daemon.
	if err := daemonctl.WritePID(c.dir.PIDFile(), os.Getpid()); err != nil {
		return err
	}
	c.e.Flush()
	if err := daemonctl.ExecForeground(bin, ctl.Args(), c.e.Environ); err != nil {
		os.Remove(c.dir.PIDFile())
		return fmt.Errorf("run %s: %w", bin, err)
	}
	return nil
}

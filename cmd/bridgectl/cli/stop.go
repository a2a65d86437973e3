package cli

import (
	"context"
	"fmt"
)

var stopCmd = &Command{
	Name:  "stop",
	Usage: "stop",
	Short: "stop the daemon and the tunnel",
	Long: `Sends SIGTERM to the daemon's and the tunnel's process groups, waits up to 10 s
for each to exit, then SIGKILLs what is left, and removes the pid files.
Unfinished agent jobs (queued, running, waiting for approval) end as
interrupted — the daemon stops them on SIGTERM — and stop names them afterwards
(` + "`bridgectl job kill ID`" + ` ends one as cancelled instead).`,
	Run: runStop,
}

func runStop(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	return c.stopAll(ctx)
}

// stopAll stops the tunnel, then the daemon, and says what it did.
func (c *ctl) stopAll(ctx context.Context) error {
	tpid, terr := c.stopTunnel(ctx)
	switch {
	case terr != nil:
		fmt.Fprintf(c.e.Stderr, "tunnel: %v\n", terr)
	case tpid != 0:
		fmt.Fprintf(c.e.Stdout, "tunnel stopped (pid %d)\n", tpid)
	}
	iw := c.watchInterrupts()
	dpid, derr := c.stopDaemon(ctx)
	if dpid != 0 {
		// Its jobs: after what is said below, or before the error.
		defer c.reportInterrupted(iw)
	}
	switch {
	case derr != nil:
		return fmt.Errorf("daemon: %w", derr)
	case dpid != 0:
		fmt.Fprintf(c.e.Stdout, "daemon stopped (pid %d)\n", dpid)
	case tpid == 0:
		fmt.Fprintln(c.e.Stdout, "nothing was running")
	}
	return terr
}

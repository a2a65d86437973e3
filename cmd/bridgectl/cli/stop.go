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
for each to exit, then SIGKILLs what is left, and removes the pid files. Only
the process that holds the state dir's lock is the daemon, and only the
cloudflared bridgectl started (its pid with the start time recorded) is the
tunnel: a pid file naming anything else is stale, said so, and left alone.
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

// stopAll stops the tunnel, then the daemon, and says what it did. A pid
// file that names a process which is not theirs is said to be stale, and
// that process is left alone.
func (c *ctl) stopAll(ctx context.Context) error {
	t, terr := c.stopTunnel(ctx)
	switch {
	case terr != nil:
		fmt.Fprintf(c.e.Stderr, "tunnel: %v\n", terr)
	case t.PID != 0:
		fmt.Fprintf(c.e.Stdout, "tunnel stopped (pid %d)\n", t.PID)
	}
	if t.StaleNote != "" {
		fmt.Fprintf(c.e.Stdout, "tunnel: %s; its record is removed\n", t.StaleNote)
	}
	iw := c.watchInterrupts()
	d, derr := c.stopDaemon(ctx)
	if d.PID != 0 {
		// Its jobs: after what is said below, or before the error.
		defer c.reportInterrupted(iw)
	}
	if d.StaleNote != "" {
		fmt.Fprintf(c.e.Stdout, "daemon: %s; the pid file is removed\n", d.StaleNote)
	}
	switch {
	case derr != nil:
		return fmt.Errorf("daemon: %w", derr)
	case d.PID != 0:
		fmt.Fprintf(c.e.Stdout, "daemon stopped (pid %d)\n", d.PID)
	case t.PID == 0:
		fmt.Fprintln(c.e.Stdout, "nothing was running")
	}
	return terr
}

package cli

import (
	"context"
	"errors"
	"fmt"
)

var reloadCmd = &Command{
	Name:  "reload",
	Usage: "reload",
	Short: "restart the daemon only; the tunnel and its public URL stay",
	Long: `Stops the daemon and starts it again with the current .env (a new secret, new
roots, ...). The tunnel process is not touched, so its public URL stays the same.
The daemon comes back on the same port (with PORT=0 the port it had is reused),
so the tunnel's origin keeps working. Running agent jobs end as interrupted.`,
	Run: runReload,
}

func runReload(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	st, err := c.reloadDaemon(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "reloaded: pid %d, listening on http://%s\n", st.PID, st.Addr)
	if t := c.tunnel(); t.PID != 0 && t.Info != nil {
		fmt.Fprintf(e.Stdout, "tunnel untouched (pid %d): %s\n", t.PID, t.Info.URL+"/mcp/"+c.cfg.PathSecret)
	}
	return nil
}

// errNotRunning is returned by reloadDaemon when there is nothing to reload.
var errNotRunning = errors.New("the daemon is not running: start it with `bridgectl start`")

// reloadDaemon restarts a running daemon on the port it had (when PORT is 0)
// and leaves the tunnel alone.
func (c *ctl) reloadDaemon(ctx context.Context) (daemonStatus, error) {
	s := c.daemon(ctx)
	if s.PID == 0 {
		return daemonStatus{}, errNotRunning
	}
	prevPort := portOf(s.Addr)
	pin := 0
	if c.cfg.Port == 0 {
		pin = prevPort
	}
	if t := c.tunnel(); t.PID != 0 && t.Info != nil && c.cfg.Port != 0 && originPort(t.Info.Origin) != c.cfg.Port {
		fmt.Fprintf(c.e.Stderr, "warning: the tunnel forwards to %s but PORT is now %d: run `bridgectl untunnel && bridgectl tunnel` after this\n", t.Info.Origin, c.cfg.Port)
	}
	if unit, user := systemdUnit(s.PID); unit != "" {
		return c.restartUnit(ctx, unit, user, s.PID)
	}
	if _, err := c.stopDaemon(ctx); err != nil {
		return daemonStatus{}, err
	}
	return c.startDaemon(ctx, pin, true)
}

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var reloadCmd = &Command{
	Name:  "reload",
	Usage: "reload",
	Short: "restart the daemon only; the tunnel and its public URL stay",
	Long: `Stops the daemon and starts it again with the current .env (a new secret, new
roots, ...) — the .env the daemon was started with, from any directory. The
new configuration is checked first (the file parses, every value is valid,
the secret, the runtime roots, a changed port is free): if it would not
start, nothing is stopped and the reason is printed. The tunnel process is not touched, so its public URL stays the same.
The daemon comes back on the same port (with PORT=0 the port it had is reused),
so the tunnel's origin keeps working. Unfinished agent jobs (queued, running,
waiting for approval) end as interrupted: reload names them afterwards
(` + "`bridgectl jobs`" + ` lists them before; ` + "`bridgectl job kill ID`" + ` ends one as cancelled).`,
	Run: runReload,
}

func runReload(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	st, iw, err := c.reloadDaemon(ctx)
	if iw != nil {
		defer c.reportInterrupted(*iw) // after the lines below, or before the error
	}
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

// reloadDaemon restarts a running daemon (daemonctl.Controller.Reload: on
// the port it had when PORT is 0) and leaves the tunnel alone. Once it has
// stopped the daemon, it returns an interruptWatch (also with an error) for
// the caller to report the jobs the reload interrupted with
// c.reportInterrupted.
func (c *ctl) reloadDaemon(ctx context.Context) (daemonctl.Status, *interruptWatch, error) {
	s := c.daemon(ctx)
	if s.PID == 0 {
		return daemonctl.Status{}, nil, errNotRunning
	}
	if err := c.checkBeforeStop(s); err != nil {
		return daemonctl.Status{}, nil, err
	}
	if t := c.tunnel(); t.PID != 0 && t.Info != nil && c.cfg.Port != 0 && daemonctl.OriginPort(t.Info.Origin) != c.cfg.Port {
		fmt.Fprintf(c.e.Stderr, "warning: the tunnel forwards to %s but PORT is now %d: run `bridgectl untunnel && bridgectl tunnel` after this\n", t.Info.Origin, c.cfg.Port)
	}
	iw := c.watchInterrupts()
	st, err := c.control().Reload(ctx, s)
	c.printStartLog(err)
	return st, &iw, err
}

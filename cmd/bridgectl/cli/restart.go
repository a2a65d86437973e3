package cli

import (
	"context"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var restartCmd = &Command{
	Name:  "restart",
	Usage: "restart",
	Short: "stop the daemon and the tunnel, then start the daemon (and the same kind of tunnel)",
	Long: `Like ` + "`bridgectl stop`" + ` followed by ` + "`bridgectl start`" + `. If a tunnel was running it is
started again: a named tunnel keeps its hostname, a quick tunnel gets a NEW
trycloudflare URL. To keep the tunnel and its URL, use ` + "`bridgectl reload`" + `.
Unfinished agent jobs (queued, running, waiting for approval) end as
interrupted; restart names them. The configuration is checked before anything
stops, as for reload.`,
	Run: runRestart,
}

func runRestart(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	if c.disabled() {
		return errDisabled
	}
	if s := c.daemon(ctx); s.PID != 0 {
		if err := c.checkBeforeStop(s); err != nil {
			return err
		}
	}
	var prev *statedir.TunnelInfo
	if t := c.tunnel(); t.PID != 0 && t.Info != nil {
		prev = t.Info
	}
	if err := c.stopAll(ctx); err != nil {
		return err
	}
	st, err := c.startDaemon(ctx, daemonctl.StartOptions{JustFreed: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "started: pid %d, listening on http://%s\n", st.PID, st.Addr)
	if prev == nil {
		return nil
	}
	var ti *statedir.TunnelInfo
	if prev.Kind == "named" {
		ti, err = c.startNamedTunnel(ctx, st, prev.Hostname)
	} else {
		ti, err = c.startQuickTunnel(ctx, st)
	}
	if err != nil {
		return fmt.Errorf("the daemon runs, but the tunnel did not come back: %w", err)
	}
	fmt.Fprintf(e.Stdout, "tunnel: pid %d\npublic endpoint: %s\n", ti.PID, ti.URL+"/mcp/"+c.cfg.PathSecret)
	return nil
}

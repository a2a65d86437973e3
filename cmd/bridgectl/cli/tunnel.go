package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// tunnelStartTimeout bounds the wait for cloudflared's URL and first registered connection.
var tunnelStartTimeout = 45 * time.Second

var tunnelCmd = &Command{
	Name:  "tunnel",
	Usage: "tunnel [named HOSTNAME | check] [--show]",
	Short: "expose the daemon through a Cloudflare tunnel (quick, or named with a token)",
	Long: `tunnel          a quick tunnel: ` + "`cloudflared tunnel --url http://127.0.0.1:PORT`" + `. Refuses
                unless the daemon's /health answers. Waits for the trycloudflare URL
                (read from <state>/tunnel.log after the latest start marker) and for
                "Registered tunnel connection", records <state>/tunnel.json and prints
                the public endpoint, masked (--show prints it in full).
tunnel named HOSTNAME
                a named tunnel: reads the tunnel token from stdin, stores it in
                <state>/tunnel.token (mode 0600) and runs
                ` + "`cloudflared tunnel run --token-file FILE`" + ` (cloudflared 2025.4 or newer).
                The hostname's public route must point at http://127.0.0.1:PORT
                (see deploy/README.md). With no token on stdin the stored one is reused.
                The token is never read from a terminal (it would stay in the
                scrollback): pipe it in, or redirect stdin from a file.
tunnel check    checks the tunnel process, its registered connections, the daemon's
                /health and the public URL's /health.

The tunnel survives ` + "`bridgectl reload`" + ` and ` + "`rotate`" + `; ` + "`bridgectl untunnel`" + ` stops it.
cloudflared is BRIDGE_CLOUDFLARED_BIN, else cloudflared on PATH.`,
	Run: runTunnel,
}

func runTunnel(ctx context.Context, e *Env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "named":
			return runTunnelNamed(ctx, e, args[1:])
		case "check":
			return runTunnelCheck(ctx, e, args[1:])
		}
	}
	f := newFlags(e, true)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("tunnel: unknown argument %q (did you mean `tunnel named HOSTNAME`?)", pos[0])}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	st, err := c.tunnelPrecheck(ctx)
	if err != nil {
		return err
	}
	ti, err := c.startQuickTunnel(ctx, st)
	if err != nil {
		return err
	}
	c.printTunnel(ti)
	return nil
}

// tunnelPrecheck refuses a second tunnel and a tunnel to a daemon that does not answer.
func (c *ctl) tunnelPrecheck(ctx context.Context) (daemonctl.Status, error) {
	if t := c.tunnel(); t.PID != 0 {
		url := ""
		if t.Info != nil {
			url = ": " + t.Info.URL + "/mcp/" + c.cfg.PathSecret
		}
		return daemonctl.Status{}, fmt.Errorf("a tunnel is already running (pid %d%s); stop it with `bridgectl untunnel` first", t.PID, url)
	}
	st := c.daemon(ctx)
	if !st.Healthy {
		return daemonctl.Status{}, fmt.Errorf("the daemon does not answer /health on %s (%v): start it with `bridgectl start` before the tunnel", st.Addr, st.HealthErr)
	}
	return st, nil
}

func (c *ctl) printTunnel(ti *statedir.TunnelInfo) {
	w := c.e.Stdout
	fmt.Fprintf(w, "tunnel: %s, pid %d, forwarding to %s\n", ti.Kind, ti.PID, ti.Origin)
	fmt.Fprintf(w, "public endpoint: %s\n", ti.URL+"/mcp/"+c.cfg.PathSecret)
	if !c.e.mask.shown() {
		fmt.Fprintln(w, "(masked; `bridgectl url --show` prints it in full)")
	}
}

// findCloudflared locates cloudflared or says how to install it on this OS.
func (c *ctl) findCloudflared() (string, error) {
	if b := c.cfg.CloudflaredBin; b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", fmt.Errorf("BRIDGE_CLOUDFLARED_BIN=%s: %w", b, err)
		}
		return b, nil
	}
	if p, err := lookPath(c.e, "cloudflared"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("cloudflared is not installed (or set BRIDGE_CLOUDFLARED_BIN): %s", cloudflaredInstallHint(runtime.GOOS))
}

func cloudflaredInstallHint(goos string) string {
	switch goos {
	case "darwin":
		return "install it with `brew install cloudflared`"
	case "windows":
		return "install it with `winget install --id Cloudflare.cloudflared`"
	default:
		return "on Debian/Ubuntu download cloudflared-linux-amd64.deb (or -arm64) from https://github.com/cloudflare/cloudflared/releases/latest and run `sudo dpkg -i cloudflared-linux-*.deb`; other systems: https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/"
	}
}

// tunnelEnv is the environment cloudflared gets: bridgectl's, minus the bridge's secrets.
func (c *ctl) tunnelEnv() []string {
	var env []string
	for _, kv := range c.e.Environ {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DEEPSEEK_API_KEY", "MCP_PATH_SECRET", "TUNNEL_TOKEN":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (c *ctl) startQuickTunnel(ctx context.Context, st daemonctl.Status) (*statedir.TunnelInfo, error) {
	origin := "http://" + st.Addr
	args := []string{"tunnel", "--no-autoupdate", "--url", origin}
	ti := &statedir.TunnelInfo{Kind: "quick", Origin: origin}
	return c.runTunnelProcess(ctx, args, ti, true)
}

// runTunnelProcess starts cloudflared detached, waits for its URL (quick) and
// a registered connection, and records tunnel.json.
func (c *ctl) runTunnelProcess(ctx context.Context, args []string, ti *statedir.TunnelInfo, wantURL bool) (*statedir.TunnelInfo, error) {
	bin, err := c.findCloudflared()
	if err != nil {
		return nil, err
	}
	if err := c.createDir(); err != nil {
		return nil, err
	}
	now := c.e.Now()
	ch, err := daemonctl.Spawn(bin, args, c.tunnelEnv(), "", c.dir.TunnelLogFile(), daemonctl.StartMarker("tunnel", now))
	if err != nil {
		return nil, err
	}
	if err := daemonctl.WritePID(c.dir.TunnelPIDFile(), ch.PID); err != nil {
		ch.Stop(ctx, time.Second)
		return nil, err
	}
	fail := func(why string, tl tunnelLog) (*statedir.TunnelInfo, error) {
		ch.Stop(context.WithoutCancel(ctx), 2*time.Second)
		os.Remove(c.dir.TunnelPIDFile())
		msg := why
		if len(tl.Errors) > 0 {
			msg += "; cloudflared said:\n  " + strings.Join(tl.Errors, "\n  ")
		}
		return nil, fmt.Errorf("%s\n(full log: %s)", msg, c.dir.TunnelLogFile())
	}
	deadline := time.NewTimer(tunnelStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var tl tunnelLog
		if b, err := os.ReadFile(c.dir.TunnelLogFile()); err == nil {
			tl = scanTunnelLog(b)
		}
		if tl.Registered > 0 && (!wantURL || tl.URL != "") {
			if wantURL {
				ti.URL = tl.URL
			}
			ti.Version, ti.PID, ti.StartedAt = 1, ch.PID, now.UTC().Format(time.RFC3339)
			ti.ProcStart = ch.Proc.Start
			if now, err := statedir.Identify(ch.PID); err == nil && now.Start == ch.Proc.Start {
				ti.Exe = now.Exe // cloudflared, by now
			}
			if err := statedir.WriteJSON(c.dir.TunnelInfoFile(), ti); err != nil {
				return fail(err.Error(), tl)
			}
			return ti, nil
		}
		select {
		case <-ch.Done():
			if b, err := os.ReadFile(c.dir.TunnelLogFile()); err == nil {
				tl = scanTunnelLog(b)
			}
			return fail(fmt.Sprintf("cloudflared exited before the tunnel was up (%v)", ch.Err()), tl)
		case <-deadline.C:
			what := "a registered connection"
			if wantURL && tl.URL == "" {
				what = "the trycloudflare URL"
			}
			return fail(fmt.Sprintf("cloudflared printed no %s within %v", what, tunnelStartTimeout), tl)
		case <-ctx.Done():
			return fail("interrupted", tl)
		case <-tick.C:
		}
	}
}

// stopTunnel stops cloudflared — only the one bridgectl started, proved
// (tunnel), never a stale pid — and removes its pid file and tunnel.json.
func (c *ctl) stopTunnel(ctx context.Context) (daemonctl.TunnelStatus, error) {
	t := c.tunnel()
	if t.PID != 0 {
		if err := daemonctl.StopProcess(ctx, t.Proc, stopGrace); err != nil {
			return t, err
		}
	}
	for _, p := range []string{c.dir.TunnelPIDFile(), c.dir.TunnelInfoFile()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return t, err
		}
	}
	return t, nil
}

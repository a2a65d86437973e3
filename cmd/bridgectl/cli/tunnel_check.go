package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func runTunnelCheck(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, true)
	if err != nil {
		return err
	}
	r := &report{w: e.Stdout}
	t := c.tunnel()
	switch {
	case t.PID != 0:
		r.ok("tunnel process: cloudflared pid %d", t.PID)
	case t.StalePID != 0:
		r.fail("tunnel process: %s — see %s, then `bridgectl untunnel && bridgectl tunnel`", t.StaleNote, c.dir.TunnelLogFile())
	default:
		r.fail("tunnel process: no tunnel is running — `bridgectl tunnel` (quick) or `bridgectl tunnel named HOSTNAME`")
		return r.result()
	}
	if t.Info == nil {
		r.fail("tunnel record: %s is missing — `bridgectl untunnel && bridgectl tunnel`", c.dir.TunnelInfoFile())
		return r.result()
	}
	b, _ := os.ReadFile(c.dir.TunnelLogFile())
	tl := scanTunnelLog(b)
	if tl.Registered > 0 {
		r.ok("edge: %d registered %s", tl.Registered, plural(tl.Registered, "connection", "connections"))
	} else {
		r.fail("edge: no registered connection in %s — check the network and the log", c.dir.TunnelLogFile())
	}
	for _, l := range tl.Errors {
		fmt.Fprintf(e.Stdout, "     recent error: %s\n", l)
	}
	st := c.daemon(ctx)
	switch {
	case !st.Healthy:
		r.fail("origin: the daemon does not answer /health on %s — `bridgectl start`", st.Addr)
	case "http://"+st.Addr != t.Info.Origin:
		r.fail("origin: the tunnel forwards to %s but the daemon listens on %s — `bridgectl untunnel && bridgectl tunnel`", t.Info.Origin, st.Addr)
	default:
		r.ok("origin: %s/health answers", t.Info.Origin)
	}
	if err := publicHealth(ctx, e.HTTP, t.Info.URL); err != nil {
		hint := "a new quick tunnel can take a minute to be reachable; retry, then check the tunnel log (`bridgectl logs --tunnel`)"
		if t.Info.Kind == "named" {
			hint = "check that the hostname's public route in the Cloudflare dashboard points at " + t.Info.Origin + " (deploy/README.md), then the tunnel log (`bridgectl logs --tunnel`)"
		}
		r.fail("public: %s/health: %v — %s", t.Info.URL, err, hint)
	} else {
		r.ok("public: %s/health answers", t.Info.URL)
	}
	return r.result()
}

func publicHealth(ctx context.Context, hc *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// report prints one line per check: "OK   …" or "FAIL …" with what to do.
type report struct {
	w     io.Writer
	fails int
}

func (r *report) ok(format string, a ...any) {
	fmt.Fprintf(r.w, "OK   "+format+"\n", a...)
}

func (r *report) fail(format string, a ...any) {
	r.fails++
	fmt.Fprintf(r.w, "FAIL "+format+"\n", a...)
}

func (r *report) warn(format string, a ...any) {
	fmt.Fprintf(r.w, "WARN "+format+"\n", a...)
}

func (r *report) result() error {
	if r.fails > 0 {
		return fmt.Errorf("%d %s failed (see the FAIL %s above)", r.fails, plural(r.fails, "check", "checks"), plural(r.fails, "line", "lines"))
	}
	return nil
}

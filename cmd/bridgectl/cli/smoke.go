package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var smokeCmd = &Command{
	Name:  "smoke",
	Usage: "smoke [URL] [--show] [--no-flash]",
	Short: "end-to-end check of an endpoint: health, 404s, initialize, tools/list, one deepseek_flash",
	Long: `Checks, one line each: GET /health answers 200; a bare /mcp gives 404; a wrong
secret gives 404; MCP initialize works on the endpoint; tools/list names
deepseek_flash; one deepseek_flash call returns an answer (this spends a few
tokens; --no-flash skips it). URL is a full endpoint such as https://HOST/mcp/SECRET —
without it the local endpoint is used. Output is masked unless --show.`,
	Run: runSmoke,
}

func runSmoke(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	noFlash := f.Bool("no-flash", false, "skip the deepseek_flash call")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"smoke takes at most one URL"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	endpoint := ""
	if len(pos) == 1 {
		endpoint = strings.TrimRight(pos[0], "/")
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.HasPrefix(u.Path, "/mcp/") {
			return usageError{"smoke: URL must be a full endpoint like https://HOST/mcp/SECRET"}
		}
		e.mask.add(strings.TrimPrefix(u.Path, "/mcp/"))
	}
	// The local endpoint carries the secret in .env; a daemon started before
	// .env last changed still answers the old one.
	changed := false
	if endpoint == "" {
		if err := c.cfg.CheckSecret(); err != nil {
			return err
		}
		d := c.daemon(ctx)
		endpoint = localEndpoint(d.Addr, c.cfg.PathSecret)
		changed = c.envChanged(d)
	}
	base := endpoint[:strings.Index(endpoint, "/mcp/")]
	r := &report{w: e.Stdout}
	fmt.Fprintf(e.Stdout, "smoke test of %s\n", endpoint)
	if changed {
		fmt.Fprintf(e.Stdout, "note: %s\n", envChangedNote(c.envPath))
	}

	if code, err := httpStatus(ctx, e, http.MethodGet, base+"/health"); err != nil || code != 200 {
		r.fail("health: GET /health → %s — is the daemon running (`bridgectl status`)?", statusText(code, err))
		return r.result() // nothing else can work
	}
	r.ok("health: GET /health → 200")
	for _, p := range []struct{ name, path string }{{"bare /mcp", "/mcp"}, {"wrong secret", "/mcp/wrong-" + randomWord()}} {
		code, err := httpStatus(ctx, e, http.MethodPost, base+p.path)
		if err == nil && code == http.StatusNotFound {
			r.ok("%s: POST → 404", p.name)
		} else {
			r.fail("%s: POST → %s, want 404 — the endpoint must not reveal itself without the secret", p.name, statusText(code, err))
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, ir, err := connectMCP(cctx, e, endpoint)
	cancel()
	if err != nil {
		switch {
		case changed:
			r.fail("initialize: %v — the daemon still serves the secret it started with: `bridgectl reload`, then smoke again", err)
		case len(pos) == 1:
			r.fail("initialize: %v — check the URL against `bridgectl url` and see `bridgectl logs`", err)
		default:
			r.fail("initialize: %v — see `bridgectl logs`", err)
		}
		return r.result()
	}
	defer sess.Close()
	r.ok("initialize: %s %s, protocol %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ir.ProtocolVersion)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	tl, err := listTools(lctx, sess)
	cancel()
	if err != nil {
		r.fail("tools/list: %v", err)
		return r.result()
	}
	var names []string
	hasFlash := false
	for _, t := range tl.Tools {
		names = append(names, t.Name)
		hasFlash = hasFlash || t.Name == "deepseek_flash"
	}
	if hasFlash {
		r.ok("tools/list: %s", strings.Join(names, ", "))
	} else {
		r.fail("tools/list: no deepseek_flash among [%s]", strings.Join(names, ", "))
	}
	if *noFlash {
		r.warn("deepseek_flash: skipped (--no-flash)")
		return r.result()
	}
	fctx, cancel := context.WithTimeout(ctx, c.cfg.FlashTimeout+30*time.Second)
	defer cancel()
	start := time.Now()
	// A dead upstream costs retries with backoff: show each one as it comes
	// rather than sit silent until the last.
	res, err := callToolWatched(fctx, sess, "deepseek_flash", map[string]any{
		"task": "Smoke test from bridgectl: reply with the single word pong.", "mode": "analyze",
	}, func(msg string) {
		if why, ok := strings.CutPrefix(msg, "retrying: "); ok {
			fmt.Fprintf(e.Stdout, "     deepseek_flash: %s\n", oneLine(why, 300))
		}
	})
	switch {
	case err != nil:
		r.fail("deepseek_flash: %v", err)
	case res.IsError:
		r.fail("deepseek_flash: %s", truncate(resultText(res), 300))
	default:
		r.ok("deepseek_flash: %q in %v", truncate(resultText(res), 80), time.Since(start).Round(time.Millisecond))
	}
	return r.result()
}

func httpStatus(ctx context.Context, e *Env, method, u string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func statusText(code int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(code)
}

func randomWord() string {
	s, err := newSecret()
	if err != nil {
		return "x"
	}
	return s[:16]
}

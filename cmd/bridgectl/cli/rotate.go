package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var rotateCmd = &Command{
	Name:  "rotate",
	Usage: "rotate [--show]",
	Short: "new secret, then reload: the old URL gives 404, the new one works, the tunnel stays",
	Long: `Writes a new MCP_PATH_SECRET into .env (like ` + "`bridgectl secret`" + `), then reloads a running
daemon (like ` + "`bridgectl reload`" + `; the tunnel and its public hostname are untouched) and
checks that the old local URL now answers 404. The full new URL — the public
one if a tunnel runs, else the local one — is copied to the clipboard when a
tool is available (wl-copy, xclip, pbcopy, clip.exe; a tool that fails is
named with its exit status and first line of output) and printed masked
(--show prints it in full). Update the connector URL in your MCP host.
Unfinished agent jobs end as interrupted, as with reload (they are named): a
leaked secret is revoked at once. It acts on the running daemon's .env from any
directory, and checks the rest of the configuration before it writes the
secret or stops anything.`,
	Run: runRotate,
}

func runRotate(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoadCreatingEnv(e, args, true)
	if err != nil {
		return err
	}
	oldSecret := c.cfg.PathSecret
	running := c.daemon(ctx)
	wasRunning := running.PID != 0
	if wasRunning {
		// The new secret will be valid; the rest of the file must be too,
		// before the file or the daemon is touched.
		probe := *c
		probe.cfg.PathSecret = "rotate-check-0123456789abcdef"
		if err := probe.checkBeforeStop(running); err != nil {
			return err
		}
	}
	if _, err := c.writeSecret(); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "new secret written to %s\n", c.envPath)
	var d daemonctl.Status
	if wasRunning {
		var iw *interruptWatch
		d, iw, err = c.reloadDaemon(ctx)
		if iw != nil {
			defer c.reportInterrupted(*iw)
		}
		if err != nil {
			return fmt.Errorf("the new secret is in .env but the reload failed: %w", err)
		}
		fmt.Fprintf(e.Stdout, "reloaded: pid %d, listening on http://%s\n", d.PID, d.Addr)
		if oldSecret != "" {
			if code := postStatus(ctx, e, localEndpoint(d.Addr, oldSecret)); code == http.StatusNotFound {
				fmt.Fprintln(e.Stdout, "old URL: 404 (revoked)")
			} else {
				return fmt.Errorf("the old URL still answers %d after the reload: check `bridgectl status`", code)
			}
		}
	} else {
		d = c.daemon(ctx)
		fmt.Fprintln(e.Stdout, "the daemon is not running; the new secret applies at `bridgectl start`")
	}
	url := localEndpoint(d.Addr, c.cfg.PathSecret)
	if t := c.tunnel(); t.PID != 0 && t.Info != nil {
		url = t.Info.URL + "/mcp/" + c.cfg.PathSecret
		fmt.Fprintf(e.Stdout, "tunnel untouched (pid %d)\n", t.PID)
	} else if daemonctl.PortOf(d.Addr) == 0 {
		// PORT=0 and nothing running: the port, so the URL, is chosen at start.
		fmt.Fprintln(e.Stdout, "new endpoint: known once the daemon runs (PORT=0 picks the port at start): `bridgectl start`, then `bridgectl url --show`")
		remindHosts(e.Stdout)
		return nil
	}
	fmt.Fprintf(e.Stdout, "new endpoint: %s\n", url)
	if tool, err := copyToClipboard(ctx, e, url); err == nil {
		fmt.Fprintf(e.Stdout, "copied the full URL to the clipboard (%s)\n", tool)
	} else {
		fmt.Fprintf(e.Stdout, "the URL was NOT copied to the clipboard: %v; `bridgectl url --show` prints the full URL\n", err)
	}
	remindHosts(e.Stdout)
	return nil
}

// remindHosts tells the owner which host registrations the rotation broke
// and prints how to redo them.
func remindHosts(w io.Writer) {
	fmt.Fprintln(w, "hosts registered with the old URL (`bridgectl register HOST --url`, a connector URL) now get 404: register them again —")
	for _, h := range registerHosts {
		fmt.Fprintf(w, "  bridgectl register %s --url --show\n", h)
	}
	fmt.Fprintln(w, "hosts registered with the command form (`bridge stdio`) hold no secret and need nothing")
}

// postStatus POSTs an empty JSON-RPC body and returns the status (0 on a transport error).
func postStatus(ctx context.Context, e *Env, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

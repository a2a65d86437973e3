package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var rotateCmd = &Command{
	Name:  "rotate",
	Usage: "rotate [--now] [--show]",
	Short: "new secret, in effect at once: the old URL gives 404, the new one works, jobs and the tunnel stay",
	Long: `Writes a new MCP_PATH_SECRET into .env (like ` + "`bridgectl secret`" + `) and has the running
daemon read it over its unix socket: from then on the old URL answers 404 and
the new one works — no restart, so agent jobs (running, queued, waiting for
approval) and calls in progress go on, and the tunnel and its public hostname
are untouched. rotate checks that the old local URL answers 404 and the new one
does not. A daemon that cannot take a new secret while it runs (one without its
unix socket) must be restarted, which ends its unfinished jobs as interrupted:
rotate then names them and does nothing without --now. The full new URL — the
public one if a tunnel runs, else the local one — is copied to the clipboard
when a tool is available (wl-copy, xclip, pbcopy, clip.exe; a tool that fails
is named with its exit status and first line of output; nothing is said on a
machine with no display and no tool) and printed masked (--show prints it in
full). Update the connector URL in your MCP host. It acts on the running
daemon's .env from any directory, and checks the rest of the configuration
before it writes the secret.`,
	Run: runRotate,
}

func runRotate(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	now := f.Bool("now", false, "restart a daemon that cannot take the secret while it runs, interrupting its unfinished jobs")
	if _, err := f.parse(args); err != nil {
		return err
	}
	c, err := f.loadCreatingEnv()
	if err != nil {
		return err
	}
	oldSecret := c.cfg.PathSecret
	running := c.daemon(ctx)
	wasRunning := running.PID != 0
	hot := daemonctl.CanReloadSecret(running)
	if wasRunning {
		// The new secret will be valid; the rest of the file must be too,
		// before the file or the daemon is touched.
		probe := *c
		probe.cfg.PathSecret = "rotate-check-0123456789abcdef"
		if err := probe.checkBeforeStop(running); err != nil {
			return err
		}
		if js, _ := unfinishedJobs(c); !hot && len(js) > 0 && !*now {
			return c.refuseRestart(running, js)
		}
	}
	if _, err := c.writeSecret(); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "new secret written to %s\n", c.envPath)
	d := running
	switch {
	case wasRunning && hot:
		changed, err := c.control().ReloadSecret(ctx, running)
		if err != nil {
			return fmt.Errorf("the new secret is in .env but the daemon did not take it: %w; `bridgectl reload` applies it (it interrupts unfinished jobs)", err)
		}
		if !changed {
			return fmt.Errorf("the daemon (pid %d) still serves the old secret: MCP_PATH_SECRET is set in its environment, which wins over %s — unset it there, then `bridgectl reload`", running.PID, c.envPath)
		}
		fmt.Fprintf(e.Stdout, "in effect without a restart: pid %d, http://%s; agent jobs and calls in progress go on\n", d.PID, d.Addr)
	case wasRunning:
		var iw *interruptWatch
		d, iw, err = c.reloadDaemon(ctx)
		if iw != nil {
			defer c.reportInterrupted(*iw)
		}
		if err != nil {
			return fmt.Errorf("the new secret is in .env but the reload failed: %w", err)
		}
		fmt.Fprintf(e.Stdout, "reloaded: pid %d, listening on http://%s\n", d.PID, d.Addr)
	default:
		d = c.daemon(ctx)
		fmt.Fprintln(e.Stdout, "the daemon is not running; the new secret applies at `bridgectl start`")
	}
	if wasRunning {
		if err := checkRotated(ctx, e, d.Addr, oldSecret, c.cfg.PathSecret); err != nil {
			return err
		}
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
	switch tool, err := copyToClipboard(ctx, e, url); {
	case err == nil:
		fmt.Fprintf(e.Stdout, "copied the full URL to the clipboard (%s)\n", tool)
	case errors.Is(err, errNoClipboard) && headless(e):
		// No display and no tool: there is no clipboard to speak of.
	default:
		fmt.Fprintf(e.Stdout, "the URL was NOT copied to the clipboard: %v; `bridgectl url --show` prints the full URL\n", err)
	}
	remindHosts(e.Stdout)
	return nil
}

// checkRotated checks the rotation on the daemon at addr: the old local URL
// answers 404, the new one anything else.
func checkRotated(ctx context.Context, e *Env, addr, oldSecret, newSecret string) error {
	if oldSecret != "" {
		if code := postStatus(ctx, e, localEndpoint(addr, oldSecret)); code != http.StatusNotFound {
			return fmt.Errorf("the old URL still answers %d after the rotation: check `bridgectl status`", code)
		}
		fmt.Fprintln(e.Stdout, "old URL: 404 (revoked)")
	}
	if code := postStatus(ctx, e, localEndpoint(addr, newSecret)); code == http.StatusNotFound || code == 0 {
		return fmt.Errorf("the new URL answers %s: check `bridgectl status` and `bridgectl logs`", statusText(code, nil))
	}
	return nil
}

// unfinishedJobs are the agent jobs a restart would end as interrupted, and
// what loadJobs could not read as jobs.
func unfinishedJobs(c *ctl) ([]jobLine, []jobTrouble) {
	snaps, trouble := loadJobs(c.dir)
	var js []jobLine
	for _, s := range snaps {
		if !s.Status.Final() {
			js = append(js, jobLine{ID: s.ID, Status: string(s.Status), Steps: s.Steps, Task: truncate(s.Task, 60)})
		}
	}
	return js, trouble
}

// refuseRestart says which jobs a restart for the new secret would
// interrupt; nothing was written or stopped.
func (c *ctl) refuseRestart(running daemonctl.Status, js []jobLine) error {
	fmt.Fprintf(c.e.Stderr, "the running daemon (pid %d) cannot take a new secret without a restart, which would end %d unfinished %s as interrupted:\n", running.PID, len(js), plural(len(js), "job", "jobs"))
	for _, j := range js {
		fmt.Fprintf(c.e.Stderr, "  %s  %-16s %s\n", j.ID, j.Status, visible(j.Task, 60))
	}
	return errors.New("nothing was written or stopped: `bridgectl rotate --now` restarts it anyway, or wait for the jobs (`bridgectl jobs`)")
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

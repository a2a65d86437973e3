// Command fakebridge stands in for `bridge serve` in bridgectl's fast tests. It
// keeps the daemon's contract with bridgectl and nothing more: it reads the
// config like the daemon (config.Load, --env FILE), refuses a bad secret,
// holds the state dir's lock, listens on HOST:PORT (PORT=0 picks one),
// writes <state>/daemon.json (with its pid, exe and start time) once
// listening and removes it on SIGTERM, answers GET /health with 200 and serves
// MCP on POST /mcp/<secret> to MCP clients (any other POST there gets 200
// and "{}"; any other path 404) with one tool,
// deepseek_agent_cancel, which acts on the job snapshots in the state dir the
// way the daemon's registry does. It logs a line holding the
// secret and the key, so tests can prove that `bridgectl logs` masks them.
//
// On SIGTERM it marks the unfinished job snapshots interrupted, as the
// registry's Close does (the daemon also marks leftovers at start; this
// double does not, so tests can put live jobs in before starting it).
//
// Knobs: FAKEBRIDGE_IGNORE_TERM=1 ignores SIGTERM (so the stopper must SIGKILL);
// FAKEBRIDGE_CHILD=1 starts a `sleep` child in its process group that outlives
// it unless the whole group is killed.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: fakebridge serve [--env FILE]")
		os.Exit(2)
	}
	envFile := ""
	if len(args) >= 3 && args[1] == "--env" {
		envFile = args[2]
	}
	cfg, err := config.Load(envFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := cfg.CheckSecret(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Like the daemon: the state dir's lock proves to bridgectl who the
	// daemon is; it is released when the process exits.
	if _, err := dir.Lock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok","version":"fake"}`)
	})
	mcpHandler := mcpEndpoint(dir)
	mux.HandleFunc("POST /mcp/{secret}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("secret") != cfg.PathSecret {
			http.NotFound(w, r)
			return
		}
		if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			// Not an MCP client: a reachability probe (tests POST "{}").
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(os.Stderr, `{"level":"info","message":"listening on http://%s","leaky_test_line":"/mcp/%s key=%s"}`+"\n", ln.Addr(), cfg.PathSecret, cfg.APIKey)
	// Like the daemon: the approval-off flag does not outlive a start, and
	// daemon.json records the mode the config gave at boot.
	os.Remove(dir.ApprovalOffFlag())
	approval := "on"
	if !cfg.CCApproval {
		approval = "off"
	}
	self, _ := statedir.Identify(os.Getpid())
	if err := statedir.WriteJSON(dir.DaemonInfoFile(), statedir.DaemonInfo{
		Version: statedir.FormatVersion, PID: os.Getpid(), Addr: ln.Addr().String(),
		StartedAt: time.Now().UTC().Format(time.RFC3339), Harness: &statedir.DaemonHarness{Kind: "fake", Bin: self.Exe, Available: true},
		Sandbox: "off", Approval: approval, Exe: self.Exe, ProcStart: self.Start,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv("FAKEBRIDGE_CHILD") == "1" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, `{"level":"info","message":"child pid %d"}`+"\n", child.Process.Pid)
	}
	sigs := []os.Signal{syscall.SIGTERM, os.Interrupt}
	if os.Getenv("FAKEBRIDGE_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
		sigs = sigs[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	go srv.Serve(ln)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	interruptJobs(dir)
	os.Remove(dir.DaemonInfoFile())
	fmt.Fprintln(os.Stderr, `{"level":"info","message":"stopped"}`)
}

// mcpEndpoint is a stateless MCP server with deepseek_agent_cancel (reachable
// through a tunnel, as the daemon is: no Host check). An unknown
// job is a tool error naming the unknown id; a finished job is returned
// unchanged; any other is written back as cancelled and returned.
func mcpEndpoint(dir statedir.Dir) http.Handler {
	srv := mcpserver.NewMCPServer("fakebridge", "fake", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewToolWithRawSchema("deepseek_agent_cancel", "", json.RawMessage(`{"type":"object","properties":{"job_id":{"type":"string"}},"required":["job_id"]}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s, err := jobs.Load(dir, req.GetString("job_id", ""))
			if err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("%v: it never existed here or its results expired; start a new job with deepseek_agent_start", jobs.ErrUnknownJob)), nil
			}
			if !s.Status.Final() {
				now := time.Now()
				s.Status, s.Error, s.EndedAt, s.Approval, s.QueuePosition = jobs.StatusCancelled, "cancelled by the caller", &now, nil, 0
				if err := statedir.WriteJSON(dir.JobFile(s.ID), s); err != nil {
					return nil, err
				}
			}
			payload := map[string]any{"job_id": s.ID, "status": s.Status, "error": s.Error, "steps": s.Steps,
				"last_tool": s.LastTool, "elapsed_ms": s.Elapsed(time.Now()).Milliseconds(), "cost_usd": s.CostUSD}
			return mcp.NewToolResultStructured(payload, "text for the calling model: quote the nonce"), nil
		})
	return mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStateLess(true), mcpserver.WithDisableLocalhostProtection(true))
}

// interruptJobs ends every unfinished job snapshot as interrupted, as the
// daemon's registry does when it shuts down.
func interruptJobs(dir statedir.Dir) {
	snaps, _ := jobs.LoadAll(dir)
	now := time.Now()
	for _, s := range snaps {
		if s.Status.Final() {
			continue
		}
		s.Status, s.Error, s.EndedAt, s.Approval, s.QueuePosition = jobs.StatusInterrupted, "the bridge shut down while the job was running", &now, nil, 0
		if err := statedir.WriteJSON(dir.JobFile(s.ID), s); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

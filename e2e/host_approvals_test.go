package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// TestHostApprovesOverStdio: a host on `bridge stdio` that answers
// elicitations (the official Go SDK) is asked, on its poll, to decide the
// command its job waits on. Its accept runs the command; its decline denies
// it and the job goes on. The question names the command, the workspace and
// why a person decides; the audit log and the daemon's log name the host as
// the channel of the decision.
func TestHostApprovesOverStdio(t *testing.T) {
	for _, tc := range []struct {
		action string
		ran    bool
	}{{"accept", true}, {"decline", false}} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			jobModel := startDouble(t)
			jobModel.ScriptAnthropic(dt.ToolCalls(bash("ln -s README.md link")),
				dt.Func(func(r dt.Request) dt.Turn { return dt.Text("saw: " + strings.Join(r.ToolResultTexts(), " | ")) }))
			envFile, state, root := writeStdioEnv(t, jobModel, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "500"})
			ws := readmeWorkspace(t, root)
			var mu sync.Mutex
			var asked []string
			host := stdioClientWith(t, envFile, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: tc.action}, nil
				},
			})
			ctx := t.Context()
			started := callAgent(t, ctx, host, "deepseek_agent_start", map[string]any{"workspace": ws, "task": "link the readme"}, nil)
			id := started.P.JobID
			if started.IsError || id == "" {
				t.Fatalf("start: %s", started.Text)
			}
			done := pollUntil(t, host, id, 2*time.Minute, func(p tools.AgentJobPayload) bool { return jobs.Status(p.Status).Final() })
			if done.P.Status != string(jobs.StatusDone) {
				t.Fatalf("the job ended %s: %s", done.P.Status, done.Text)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 {
				t.Fatalf("the host was asked %d times: %q", len(asked), asked)
			}
			for _, want := range []string{"ln -s README.md link", ws, "Why a person decides: ln is not on the allow list", "bridgectl approve "} {
				if !strings.Contains(asked[0], want) {
					t.Errorf("the question lacks %q:\n%s", want, asked[0])
				}
			}
			_, err := os.Lstat(filepath.Join(statedir.Dir{Root: state}.ChangesDir(id), "upper", "link"))
			if ran := err == nil; ran != tc.ran {
				t.Errorf("the command ran = %v after %s (the job's upper dir: %v); result %q", ran, tc.action, err, done.P.Result)
			}
			if !tc.ran && !strings.Contains(done.P.Result, "Denied by the user of the MCP host that polls this job: declined in the MCP host") {
				t.Errorf("the model did not see the host's decline: %q", done.P.Result)
			}
			recs, err := approvals.ReadAudit(statedir.Dir{Root: state}, true)
			if err != nil {
				t.Fatal(err)
			}
			decided := false
			for _, r := range recs {
				if r.JobID == id && r.Event == approvals.EventHuman {
					decided = r.Channel == approvals.ChannelHost && r.By == tools.HostUser && (r.Decision == "allow") == tc.ran
					if !decided {
						t.Errorf("the decision's record %+v", r)
					}
				}
			}
			if !decided {
				t.Errorf("no human decision of job %s on record: %+v", id, recs)
			}
			logs := stdioCtl(t, envFile, "logs", "-n", "400")
			if !strings.Contains(logs, "by "+tools.HostUser+" (the MCP host): Bash: ln -s README.md link") {
				t.Errorf("bridgectl logs lacks the host's decision:\n%s", logs)
			}
		})
	}
}

// TestClaudeCodePrintModeDeclinesHostApprovals: Claude Code in print mode
// as the host on `bridge stdio` (protocol 2026-07-28) is asked on its poll
// through a multi-round-trip input request, answers it "cancel" by itself
// (it has nobody to ask), and the
// job's command is denied at once (not after the approval timeout); the job
// goes on to its end, and the record names the host as the channel.
func TestClaudeCodePrintModeDeclinesHostApprovals(t *testing.T) {
	t.Parallel()
	jobModel := startDouble(t)
	jobModel.ScriptAnthropic(dt.ToolCalls(bash("ln -s README.md link")),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("saw: " + strings.Join(r.ToolResultTexts(), " | ")) }))
	envFile, state, root := writeStdioEnv(t, jobModel, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "500", "BRIDGE_APPROVAL_TIMEOUT_MS": "90000"})
	ws := readmeWorkspace(t, root)
	mcpConfig := []byte(stdioCtl(t, envFile, "register", "cursor"))
	var jobID string
	host := dt.New(dt.WithDefault(stdioHostBrain(func(calls []stdioHostCall) dt.Turn {
		switch len(calls) {
		case 0:
			return loadTool(stdioStartTool)
		case 1:
			return dt.ToolCalls(dt.Call(stdioStartTool, map[string]any{"workspace": ws, "task": "link the readme"}))
		case 2:
			jobID, _ = stdioPayload(t, calls[1])["job_id"].(string)
			return loadTool(stdioPollTool)
		}
		last := calls[len(calls)-1]
		if last.Name == stdioPollTool {
			p := stdioPayload(t, last)
			if st, _ := p["status"].(string); jobs.Status(st).Final() || len(calls) > 12 {
				return dt.Text(fmt.Sprintf("status %v: %v", p["status"], p["result"]))
			}
		}
		return dt.ToolCalls(dt.Call(stdioPollTool, map[string]any{"job_id": jobID, "wait_seconds": 20}))
	})))
	t.Cleanup(host.Close)
	start := time.Now()
	r := runStdioHost(t, host, mcpConfig, "link the readme with a job", stdioStartTool, stdioPollTool)
	took := time.Since(start)
	t.Logf("host session: %q in %s", r.Result, took)
	if !strings.HasPrefix(r.Result, "status done: ") || !strings.Contains(r.Result, "Denied by the user of the MCP host that polls this job: cancelled in the MCP host") {
		t.Errorf("the host session ended with %q\n%s", r.Result, r.Output)
	}
	recs, err := approvals.ReadAudit(statedir.Dir{Root: state}, true)
	if err != nil {
		t.Fatal(err)
	}
	var decision *approvals.AuditRecord
	for i, rec := range recs {
		if rec.JobID == jobID && rec.Event == approvals.EventHuman {
			decision = &recs[i]
		}
	}
	if decision == nil || decision.Channel != approvals.ChannelHost || decision.Decision != "deny" {
		t.Errorf("the host's decision on record: %+v (all: %+v)", decision, recs)
	}
	if _, err := os.Lstat(filepath.Join(statedir.Dir{Root: state}.ChangesDir(jobID), "upper", "link")); err == nil {
		t.Error("the declined command ran")
	}
}

// TestHostApprovalsStayOffOverHTTP: with the default BRIDGE_HOST_APPROVALS
// (socket), a host on the HTTP URL is never asked, though it answers
// elicitations: its poll waits for the person at the terminal, and the
// request stays pending until bridgectl answers it.
func TestHostApprovalsStayOffOverHTTP(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	g.d.ScriptAnthropic(dt.ToolCalls(bash("ln -s README.md link")), dt.Text("done"))
	var mu sync.Mutex
	asked := 0
	cs := goSDKClientWith(t, g.URL(), &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	id := startJob(t, cs, "link the readme", g.workspace(t, map[string]string{"README.md": "hi\n"})).P.JobID
	req, ok := g.waitPending(t, id, jobLimit)
	if !ok {
		t.Fatal("the job never waited for a person")
	}
	c := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 1}, nil)
	if c.IsError || c.P.Status != string(jobs.StatusWaitingApproval) {
		t.Fatalf("poll: %s", c.Text)
	}
	mu.Lock()
	n := asked
	mu.Unlock()
	if n != 0 {
		t.Errorf("the HTTP host was asked %d times", n)
	}
	if ps := g.pendingOf(t, id); len(ps) != 1 || ps[0].ID != req.ID {
		t.Errorf("pending after the poll: %+v", ps)
	}
	if err := g.queue().Decide(req.ID, false, "e2e: done here", "e2e"); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, cs, id, jobLimit)
}

// readmeWorkspace is root/ws holding a README.md.
func readmeWorkspace(t *testing.T, root string) string {
	t.Helper()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

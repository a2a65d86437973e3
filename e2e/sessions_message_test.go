package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A follow-up sent while the job's first turn runs is answered in the same
// job, after that turn; the message is in its ledger and trace.
func TestSessionsMessageFollowUp(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "100"})
	ws := a.workspace(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	a.d.ScriptAnthropic(
		dt.Func(func(dt.Request) dt.Turn { close(started); <-release; return dt.Text("First answer.") }),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("Follow-up answered: " + r.LastUserText()) }),
	)
	cs := goSDKClient(t, a.URL())
	id := startUntil(t, cs, "Answer twice.", ws, started)
	m := callAgent(t, t.Context(), cs, "deepseek_agent_message", map[string]any{"job_id": id, "message": "also say PINEAPPLE", "mode": "follow_up"}, nil)
	close(release)
	if m.IsError || m.P.JobID != id || !strings.Contains(m.Text, "Message sent (follow_up)") {
		t.Fatalf("message: IsError %v: %s", m.IsError, m.Text)
	}
	if n := len(m.P.Ledger); n == 0 || m.P.Ledger[n-1].Tool != "message" || m.P.Ledger[n-1].Verdict != jobs.VerdictDelivered || !strings.Contains(m.P.Ledger[n-1].Summary, "PINEAPPLE") {
		t.Errorf("ledger = %+v", m.P.Ledger)
	}
	done := waitSettled(t, cs, id, 90*time.Second)
	if done.P.Status != string(jobs.StatusDone) || done.P.Result != "Follow-up answered: also say PINEAPPLE" || !hexNonce.MatchString(done.P.Nonce) {
		t.Fatalf("job = %s %q: %s", done.P.Status, done.P.Result, done.Text)
	}
	snap := assertSnapshotFile(t, a.dir(), id, jobs.StatusDone)
	if !traceHas(snap, "message", "follow_up: also say PINEAPPLE") {
		t.Errorf("trace lacks the message: %+v", snap.Trace)
	}
	// A message to a job that has ended says so and points to continue.
	late := callAgent(t, t.Context(), cs, "deepseek_agent_message", map[string]any{"job_id": id, "message": "more", "mode": "follow_up"}, nil)
	if !late.IsError || !strings.Contains(late.Text, "has ended") || !strings.Contains(late.Text, "deepseek_agent_continue") {
		t.Errorf("message to an ended job: IsError %v %s", late.IsError, late.Text)
	}
}

// A steer interrupts a long turn (the model is still answering) and the job
// then does what the steer asked.
func TestSessionsMessageSteer(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "100"})
	ws := a.workspace(t, nil)
	started := make(chan struct{})
	a.d.ScriptAnthropic(
		dt.Func(func(dt.Request) dt.Turn { close(started); return dt.Text("never sent").WithDelay(10 * time.Minute) }),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo steered > steer.txt", "description": "do the steer"})),
		dt.Text("Steered: wrote steer.txt."),
	)
	a.approveEverything(t) // the redirect asks a human
	cs := goSDKClient(t, a.URL())
	id := startUntil(t, cs, "Think for a long time.", ws, started)
	m := callAgent(t, t.Context(), cs, "deepseek_agent_message", map[string]any{"job_id": id, "message": "Stop thinking; write steer.txt.", "mode": "steer"}, nil)
	if m.IsError || !strings.Contains(m.Text, "Message sent (steer)") {
		t.Fatalf("steer: IsError %v: %s", m.IsError, m.Text)
	}
	done := waitSettled(t, cs, id, 90*time.Second)
	if done.P.Status != string(jobs.StatusDone) || done.P.Result != "Steered: wrote steer.txt." {
		t.Fatalf("job = %s %q: %s", done.P.Status, done.P.Result, done.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "steer.txt")); err != nil || string(b) != "steered\n" {
		t.Errorf("steer.txt = %q, %v", b, err)
	}
	reqs := a.d.ScriptedAnthropicRequests()
	if len(reqs) < 2 || !strings.Contains(reqs[1].LastUserText(), "write steer.txt") {
		t.Errorf("the request after the steer does not carry it")
	}
}

// startUntil starts a job and returns its id once started is closed (its
// first model request has come).
func startUntil(t *testing.T, cs *mcp.ClientSession, task, ws string, started <-chan struct{}) string {
	t.Helper()
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": task, "workspace": ws}, nil)
	if c.IsError {
		t.Fatalf("start: %s", c.Text)
	}
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the job's first model request never came")
	}
	return c.P.JobID
}

// traceHas reports whether the snapshot's trace has an entry of kind whose
// detail contains detail.
func traceHas(s jobs.Snapshot, kind, detail string) bool {
	for _, e := range s.Trace {
		if e.Kind == kind && strings.Contains(e.Detail, detail) {
			return true
		}
	}
	return false
}

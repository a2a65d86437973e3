package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// claudeBin is the pinned Claude Code install (scripts/install.sh).
func claudeBin(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), ".cache", "bin", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the pinned Claude Code is not installed (%v): run scripts/install.sh", err)
	}
	return p
}

// `bridgectl job kill ID` cancels a live job through the daemon's
// deepseek_agent_cancel: the job ends as cancelled, and no process of its tree
// (marked BRIDGE_JOB_ID=ID) is left.
func TestJobKill(t *testing.T) {
	build(t)
	claude := claudeBin(t)
	// The model "thinks" for a minute: the job is running while we kill it.
	double := deepseektest.New(deepseektest.WithKey(testKey))
	t.Cleanup(double.Close)
	double.ScriptAnthropic(deepseektest.Turn{Delay: time.Minute, Text: "too late"})

	w := newWorld(t)
	ws := filepath.Join(w.dir, "workspace")
	os.MkdirAll(ws, 0o700)
	f, _ := os.OpenFile(w.envFile, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("DEEPSEEK_BASE_URL=" + double.URL() + "\nBRIDGE_CLAUDE_BIN=" + claude + "\nBRIDGE_SYNC_WINDOW_MS=500\nBRIDGE_SANDBOX=off\nBRIDGE_CC_APPROVAL=off\n")
	f.Close()
	w.must("allow", ws)
	w.must("start")
	_, addr := w.daemonInfo()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "jobkill-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp/" + testSecret, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_start", Arguments: map[string]any{"task": "say hello", "workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &p)
	if res.IsError || p.JobID == "" {
		t.Fatalf("deepseek_agent_start: %s %s", b, res.Content)
	}
	// Wait until the harness runs (its tree carries the job marker).
	if !poll(30*time.Second, func() bool { return len(procsWithMarker("BRIDGE_JOB_ID="+p.JobID)) > 0 }) {
		t.Fatalf("no harness process for job %s\n%s", p.JobID, w.must("jobs", p.JobID))
	}
	if out := w.must("jobs"); !strings.Contains(out, p.JobID+"  running") {
		t.Fatalf("jobs before kill:\n%s", out)
	}
	// By an 8-character prefix; the text is for the owner, not the model.
	out := w.must("job", "kill", p.JobID[:8])
	if !strings.Contains(out, "cancelled job "+p.JobID+": it was running") || strings.Contains(out, "nonce") || strings.Contains(out, "deepseek_agent") {
		t.Fatalf("job kill: %q", out)
	}
	// The snapshot is written by another process: poll it.
	if !poll(30*time.Second, func() bool { out = w.must("jobs", p.JobID); return strings.Contains(out, "status:     cancelled") }) {
		t.Fatalf("job not cancelled:\n%s", out)
	}
	if left := procsWithMarker("BRIDGE_JOB_ID=" + p.JobID); len(left) > 0 {
		t.Fatalf("the job's processes are still alive: %v", left)
	}
	// Again: it had already ended, nothing is cancelled (exit 3).
	if out, errs, code := w.ctl("job", "kill", p.JobID); code != 3 || !strings.Contains(out, "had already ended: cancelled") {
		t.Fatalf("killing an ended job: %d %q %q", code, out, errs)
	}
	if _, errs, code := w.ctl("job", "kill", strings.Repeat("0", 32)); code != 1 || !strings.Contains(errs, "no job") || !strings.Contains(errs, "`bridgectl jobs`") {
		t.Fatalf("killing an unknown job: %d %q", code, errs)
	}
}

// procsWithMarker lists live (non-zombie) processes whose environment holds marker.
func procsWithMarker(marker string) []string {
	w := &world{marker: marker}
	return w.leftovers()
}

// poll checks cond on a ticker until it holds or d passes: for state another
// process changes, where there is no event to wait on.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

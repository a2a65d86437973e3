package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// With the real daemon and Claude Code: a running job's task, sent by the MCP
// caller with an escape sequence, is shown escaped by `bridgectl jobs`;
// `bridgectl allow` does not reload (which would interrupt the job) and names
// it; `bridgectl reload` interrupts it and says so, and no process of the job
// is left.
func TestAllowAndReloadWithARunningJob(t *testing.T) {
	build(t)
	claude := claudeBin(t)
	// The model "thinks" for a minute: the job is running meanwhile.
	double := deepseektest.New(deepseektest.WithKey(testKey))
	t.Cleanup(double.Close)
	double.ScriptAnthropic(deepseektest.Turn{Delay: time.Minute, Text: "too late"})

	w := newWorld(t)
	ws, other := filepath.Join(w.dir, "workspace"), filepath.Join(w.dir, "other")
	for _, d := range []string{ws, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(w.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("DEEPSEEK_BASE_URL=" + double.URL() + "\nBRIDGE_CLAUDE_BIN=" + claude + "\nBRIDGE_SYNC_WINDOW_MS=500\nBRIDGE_SANDBOX=off\nBRIDGE_CC_APPROVAL=off\n")
	f.Close()
	w.must("allow", ws)
	w.must("start")
	pid, addr := w.daemonInfo()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "allow-jobs-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp/" + testSecret, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	task := "benign\u001b[2K\rfake line"
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_start", Arguments: map[string]any{"task": task, "workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		JobID string `json:"job_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &p)
	if res.IsError || p.JobID == "" {
		t.Fatalf("deepseek_agent_start: %s %s", b, res.Content)
	}
	if !poll(30*time.Second, func() bool { return len(procsWithMarker("BRIDGE_JOB_ID="+p.JobID)) > 0 }) {
		t.Fatalf("no harness process for job %s\n%s", p.JobID, w.must("jobs", p.JobID))
	}

	// Item 1: the caller's escape sequence is shown, not sent to the terminal.
	for _, args := range [][]string{{"jobs"}, {"jobs", p.JobID}, {"status"}} {
		out := w.must(args...)
		if strings.ContainsAny(out, "\x1b\r") || !strings.Contains(out, `benign\u{1b}[2K fake line`) {
			t.Errorf("bridgectl %v prints the task raw or not at all:\n%q", args, out)
		}
	}

	// Item 2: allow writes .env but does not reload while the job runs.
	out := w.must("allow", other)
	if !strings.Contains(out, "NOT reloaded: 1 job is not finished") || !strings.Contains(out, p.JobID[:12]+"  running") || strings.Contains(out, "reloaded: pid") {
		t.Fatalf("allow with a running job:\n%s", out)
	}
	if pid2, _ := w.daemonInfo(); pid2 != pid {
		t.Fatalf("allow restarted the daemon: pid %d → %d", pid, pid2)
	}
	if out := w.must("jobs", p.JobID); !strings.Contains(out, "status:     running") {
		t.Fatalf("the job after allow:\n%s", out)
	}
	if env, err := os.ReadFile(w.envFile); err != nil || !strings.Contains(string(env), other) {
		t.Fatalf(".env lacks the new root: %v\n%s", err, env)
	}

	// reload interrupts it and names it; the real daemon recorded it.
	out = w.must("reload")
	if !strings.Contains(out, "reloaded: pid") || !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, p.JobID[:12]+"  running") {
		t.Fatalf("reload with a running job:\n%s", out)
	}
	if out := w.must("jobs", p.JobID); !strings.Contains(out, "status:     interrupted") {
		t.Fatalf("the job after reload:\n%s", out)
	}
	if left := procsWithMarker("BRIDGE_JOB_ID=" + p.JobID); len(left) > 0 {
		t.Fatalf("the job's processes outlived the reload: %v", left)
	}
	if out := w.must("allow"); !strings.Contains(out, other) {
		t.Fatalf("allowed roots after reload:\n%s", out)
	}
}

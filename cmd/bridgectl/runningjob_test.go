package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
)

// startRunningJob starts the real daemon (bridgectl start) with the real
// Claude Code pointed at a double whose model "thinks" for a minute, starts
// one agent job with task in a fresh workspace over MCP, and returns once the
// job's harness runs. extraDirs are names of directories made beside the
// workspace ("workspace", in the world's dir).
func startRunningJob(t *testing.T, task string, extraDirs ...string) (w *world, ws, jobID string) {
	t.Helper()
	return startScriptedJob(t, task, "off", []deepseektest.Turn{{Delay: time.Minute, Text: "too late"}}, extraDirs...)
}

// startScriptedJob is startRunningJob with the model's turns scripted and
// BRIDGE_CC_APPROVAL set to approval.
func startScriptedJob(t *testing.T, task, approval string, turns []deepseektest.Turn, extraDirs ...string) (w *world, ws, jobID string) {
	t.Helper()
	build(t)
	claude := testenv.ClaudeBin(t)
	double := deepseektest.New(deepseektest.WithKey(testKey))
	t.Cleanup(double.Close)
	double.ScriptAnthropic(turns...)

	w = newWorld(t)
	ws = filepath.Join(w.dir, "workspace")
	for _, name := range append([]string{"workspace"}, extraDirs...) {
		if err := os.MkdirAll(filepath.Join(w.dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(w.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("DEEPSEEK_BASE_URL=" + double.URL() + "\nBRIDGE_CLAUDE_BIN=" + claude + "\nBRIDGE_SYNC_WINDOW_MS=500\nBRIDGE_SANDBOX=off\nBRIDGE_CC_APPROVAL=" + approval + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	w.must("allow", ws)
	w.must("start")
	_, addr := w.daemonInfo()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bridgectl-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp/" + testSecret, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_start", Arguments: map[string]any{"task": task, "workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		JobID string `json:"job_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &p); err != nil || res.IsError || p.JobID == "" {
		t.Fatalf("deepseek_agent_start: %s %s (%v)", b, res.Content, err)
	}
	// The harness runs once its tree carries the job marker.
	if !poll.Until(30*time.Second, func() bool { return len(procsWithMarker("BRIDGE_JOB_ID="+p.JobID)) > 0 }) {
		t.Fatalf("no harness process for job %s\n%s", p.JobID, w.must("jobs", p.JobID))
	}
	return w, ws, p.JobID
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// rotate while a job waits for a human: the running daemon takes the new
// secret without a restart — the old URL answers 404 at once, the new one
// serves MCP, the daemon's pid is the same — and the job still waits, then
// runs to done when approved.
func TestRotateKeepsAWaitingJob(t *testing.T) {
	w, _, id := startScriptedJob(t, "Print alpha and beta.", "on", []deepseektest.Turn{
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]any{"command": "echo alpha && echo beta", "description": "two echoes"})),
		deepseektest.Func(func(r deepseektest.Request) deepseektest.Turn {
			return deepseektest.Text("output: " + strings.Join(r.ToolResultTexts(), " | "))
		}),
	})
	var reqs []string
	if !poll.Until(60*time.Second, func() bool {
		reqs, _ = filepath.Glob(filepath.Join(w.state, "approvals", "*.request.json"))
		return len(reqs) == 1 && strings.Contains(w.must("jobs", id), "waiting_approval")
	}) {
		t.Fatalf("job %s does not wait for a human (%d requests):\n%s", id, len(reqs), w.must("jobs", id))
	}
	pid, addr := w.daemonInfo()

	out := w.must("rotate")
	env, _ := os.ReadFile(w.envFile)
	secret := envValue(string(env), "MCP_PATH_SECRET")
	if len(secret) != 64 || strings.Contains(out, secret) {
		t.Fatalf("rotate wrote %d characters, or printed them:\n%s", len(secret), out)
	}
	for _, want := range []string{"in effect without a restart: pid ", "agent jobs and calls in progress go on", "old URL: 404 (revoked)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "clipboard") {
		t.Errorf("rotate spoke of a clipboard on a machine with none:\n%s", out)
	}
	if p, _ := w.daemonInfo(); p != pid {
		t.Errorf("rotate restarted the daemon: pid %d → %d", pid, p)
	}
	if c := status(t, "POST", "http://"+addr+"/mcp/"+testSecret); c != 404 {
		t.Errorf("old URL: %d, want 404", c)
	}
	if err := initialize(t, "http://"+addr+"/mcp/"+secret); err != nil {
		t.Errorf("new URL: %v", err)
	}
	if out := w.must("jobs", id); !strings.Contains(out, "waiting_approval") {
		t.Fatalf("after rotate, job %s no longer waits:\n%s", id, out)
	}

	w.must("approve", strings.TrimSuffix(filepath.Base(reqs[0]), ".request.json"))
	if !poll.Until(60*time.Second, func() bool { return strings.Contains(w.must("jobs", id), "done") }) {
		t.Fatalf("job %s did not finish once approved:\n%s", id, w.must("jobs", id))
	}
	if out := w.must("jobs", id); !strings.Contains(out, "output: alpha") {
		t.Errorf("job %s after approval:\n%s", id, out)
	}
}

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// TestRulesResolvePathsInTheJobsView: the daemon answers a job's tool calls,
// but the job sees its workspace through its overlay and its jail, where a
// link it made exists and the workspace underneath does not have it. A
// Write through a link the job made to /tmp (approved by a human as a
// command) must be judged where it lands, outside the workspace in the
// job's view, not as the literal path inside the workspace the daemon's
// view makes of it: it goes to the human, who refuses it, and the audit log
// holds no allow for it.
func TestRulesResolvePathsInTheJobsView(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, map[string]string{"README.md": "hello\n"})
	target := filepath.Join(ws, "t", "planted.txt")
	g.d.ScriptAnthropic(
		dt.ToolCalls(bash("ln -s /tmp t")),
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": target, "content": "planted\n"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("saw: " + strings.Join(r.ToolResultTexts(), " | ")) }),
	)
	cs := goSDKClient(t, g.URL())
	id := startJob(t, cs, "Configure the project.", ws).P.JobID
	// A human approves the commands, and nothing else.
	if !poll.Until(jobLimit, func() bool {
		if s, err := jobs.Load(g.dir(), id); err == nil && s.Status.Final() {
			return true
		}
		for _, p := range g.pendingOf(t, id) {
			if err := g.queue().Decide(p.ID, p.Tool == "Bash", "e2e: commands only", "e2e"); err != nil {
				t.Fatalf("decide %s: %v", p.ID, err)
			}
		}
		return false
	}) {
		t.Fatalf("the job did not end within %v", jobLimit)
	}
	c := waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" {
		t.Fatalf("%s: %s", c.P.Status, c.Text)
	}
	results := toolResults(g.d)
	t.Logf("results: %q", results)
	lines := g.auditOf(t, c.P.JobID)
	if hasAudit(lines, "Write "+target, "auto", "allow") || hasAudit(lines, "Write "+target, "decision", "allow") {
		t.Errorf("the Write through the job's link was allowed: %v", lines)
	}
	if !hasAudit(lines, "Bash: ln -s /tmp t", "human", "allow") {
		t.Fatalf("the link was not made (the human's approval is missing): %v", lines)
	}
	asked := false
	for _, l := range lines {
		if l["summary"] == "Write "+target && l["event"] == "request" && l["verdict"] == "ask" {
			asked = strings.HasPrefix(l["reason"].(string), "in the job's view: ")
		}
	}
	if !asked || !hasAudit(lines, "Write "+target, "human", "deny") {
		t.Errorf("the Write through the job's link did not go to the human, for its reading in the job's view: %v", lines)
	}
	if len(results) != 2 || !strings.HasPrefix(results[1], "Denied by the owner") {
		t.Errorf("the Write's result: %q", results)
	}
}

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Acceptance is read from the job's own tool calls: a model that claims
// the tests pass without running them gets not_checked and
// acceptance_ready false; a job that edits and then runs the check's
// command, exit 0, gets met and ready. Real bridge and Claude Code.
func TestAcceptanceIsReadFromTheJobsOwnRuns(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	a.approveEverything(t)
	cs := goSDKClient(t, a.URL())
	checks := []any{map[string]any{"check": "tests pass", "command": "make test"}, map[string]any{"check": "the change is small"}}
	start := func(ws string) agentCall {
		t.Helper()
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
			"task": "Fix the greeting.", "workspace": ws, "context": "The greeting is printed by hello.txt.", "acceptance": checks}, nil)
		if c.IsError {
			t.Fatalf("start: %s", c.Text)
		}
		return waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	files := map[string]string{"Makefile": "test:\n\tgrep -q hello hello.txt\n", "hello.txt": "helo\n"}

	// The model only says so.
	a.d.ScriptAnthropic(dt.Text("Fixed it; all tests pass."))
	c := start(a.workspace(t, files))
	if c.P.Status != "done" || c.P.AcceptanceReady == nil || *c.P.AcceptanceReady || len(c.P.Acceptance) != 2 ||
		c.P.Acceptance[0].Status != jobs.CheckNotChecked || c.P.Acceptance[1].Status != jobs.CheckJudgement {
		t.Fatalf("a claim without a run: %s ready %v %+v", c.P.Status, c.P.AcceptanceReady, c.P.Acceptance)
	}
	if !strings.Contains(c.Text, "Acceptance: NOT READY") {
		t.Errorf("the text does not say it is not ready:\n%s", c.Text)
	}
	task := a.d.AnthropicRequests()[0].LastUserText()
	for _, want := range []string{"Fix the greeting.", "The greeting is printed by hello.txt.", "- tests pass — run: make test"} {
		if !strings.Contains(task, want) {
			t.Errorf("the model's task lacks %q:\n%s", want, task)
		}
	}

	// The job edits, then runs the command: met. A failing run first is
	// not held against it once the last run passes.
	ws := a.workspace(t, files)
	a.d.ScriptAnthropic(
		dt.ToolCalls(bash("make test")),
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "hello.txt")})),
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "hello.txt"), "content": "hello\n"})),
		dt.ToolCalls(bash("make test")),
		dt.Text("Fixed the typo; make test passes."),
	)
	c = start(ws)
	if c.P.Status != "done" || c.P.AcceptanceReady == nil || !*c.P.AcceptanceReady || c.P.Acceptance[0].Status != jobs.CheckMet {
		t.Fatalf("edit then a passing run: %s ready %v %+v\n%s", c.P.Status, c.P.AcceptanceReady, c.P.Acceptance, c.Text)
	}
	if len(c.P.Commands) != 2 || c.P.Commands[0].ExitCode == nil || *c.P.Commands[0].ExitCode == 0 {
		t.Errorf("commands %+v: the first make test should have failed", c.P.Commands)
	}
}

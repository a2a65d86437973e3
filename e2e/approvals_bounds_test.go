package e2e

// The approval rules' bound on what they read, end to end: the real Claude
// Code in its jail asks about a command, the daemon answers.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// A command over 64 KiB is denied unread, even one the rules would allow
// (an echo): reading it had cost the daemon seconds of CPU a MiB (a glob is
// expanded for each argument), a question a job may ask 20 times a second.
// The model is told what to do instead, and the command never runs. A short
// one beside it runs.
func TestAnOverlongCommandIsDeniedUnreadInAJob(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil) // approvals on, nobody answers: what runs, runs by the rules
	ws := g.workspace(t, nil)
	long := "echo " + strings.Repeat("x", 70<<10)
	g.d.ScriptAnthropic(
		dt.ToolCalls(bash(long)),
		dt.ToolCalls(bash("echo small")),
		dt.Text("done"),
	)
	c := g.runToEnd(t, "Write the files.", ws)
	if c.P.Status != "done" {
		t.Fatalf("job %s: %s", c.P.Status, c.Text)
	}
	if len(c.P.Commands) != 2 || !c.P.Commands[0].Denied || c.P.Commands[1].ExitCode == nil || *c.P.Commands[1].ExitCode != 0 {
		t.Errorf("commands %+v: want the long one denied, never run, and the short one run", c.P.Commands)
	}
	if len(c.P.Ledger) < 2 || c.P.Ledger[0].Verdict != policy.DeniedByPolicy || !strings.Contains(c.P.Ledger[0].Reason, "longer than the rules read (64 KiB)") ||
		c.P.Ledger[1].Verdict != policy.AllowedByRule {
		t.Errorf("ledger %+v: want the long command denied by the 64 KiB bound, the short one allowed", verdicts(c.P))
	}
}

// A glob through directories linked to themselves matches 10^7 names here:
// the rules stop reading at their bound and refuse it (what they did not
// read could hold a protected path), where expanding it whole had kept the
// daemon busy for minutes on one question. The next command runs at once.
func TestAGlobThroughLinkLoopsIsRefusedAtTheBoundInAJob(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "2000"})
	ws := g.workspace(t, map[string]string{"main.go": "package main\n"})
	for i := range 10 {
		if err := os.Symlink(".", filepath.Join(ws, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	g.d.ScriptAnthropic(
		dt.ToolCalls(bash("ls "+strings.Repeat("*/", 6)+"*")),
		dt.ToolCalls(bash("echo small")),
		dt.Text("done"),
	)
	c := g.runToEnd(t, "List the files.", ws)
	if c.P.Status != "done" {
		t.Fatalf("job %s: %s", c.P.Status, c.Text)
	}
	if len(c.P.Commands) != 2 || !c.P.Commands[0].Denied || c.P.Commands[1].ExitCode == nil || *c.P.Commands[1].ExitCode != 0 {
		t.Errorf("commands %+v: want the glob held and never run, and the short one run", c.P.Commands)
	}
	if len(c.P.Ledger) < 2 || c.P.Ledger[0].Verdict != policy.DeniedByPolicy || !strings.Contains(c.P.Ledger[0].Reason, "more files than the rules check") ||
		c.P.Ledger[1].Verdict != policy.AllowedByRule {
		t.Errorf("ledger %+v: want the glob refused at the rules' bound, the short one allowed", verdicts(c.P))
	}
}

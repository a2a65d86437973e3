package jobs

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// A check with a command is met only by the job's own run of it, exit 0,
// after its last change; a later write or another command makes it not
// checked, a failed run not met; a check without a command is never met.
func TestAcceptanceFollowsTheJobsToolCalls(t *testing.T) {
	checks := []Check{{Check: "tests pass", Command: "make test"}, {Check: "lint is clean", Command: " make lint "}, {Check: "the docs read well"}}
	tests := []struct {
		name   string
		events []harness.Event
		want   []string // status per check
		ready  bool
	}{
		{"never run", nil, []string{CheckNotChecked, CheckNotChecked, CheckJudgement}, false},
		{"both pass after the edit", []harness.Event{
			evToolUse("e1", "Edit", "/ws/a.go"), evToolResult("e1", false, nil),
			evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(0)),
			evToolUse("b2", "Bash", "make lint"), evToolResult("b2", false, intp(0)),
		}, []string{CheckMet, CheckMet, CheckJudgement}, true},
		{"an edit after the run", []harness.Event{
			evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(0)),
			evToolUse("b2", "Bash", "make lint"), evToolResult("b2", false, intp(0)),
			evToolUse("e1", "Write", "/ws/a.go"), evToolResult("e1", false, nil),
		}, []string{CheckNotChecked, CheckNotChecked, CheckJudgement}, false},
		{"another command after the run", []harness.Event{
			evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(0)),
			evToolUse("b3", "Bash", "sed -i s/a/b/ a.go"), evToolResult("b3", false, intp(0)),
			evToolUse("b2", "Bash", "make lint"), evToolResult("b2", false, intp(0)),
		}, []string{CheckNotChecked, CheckMet, CheckJudgement}, false},
		{"the last run failed", []harness.Event{
			evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(0)),
			evToolUse("b4", "Bash", "make test"), evToolResult("b4", true, intp(2)),
			evToolUse("b2", "Bash", "make lint"), evToolResult("b2", false, intp(0)),
		}, []string{CheckNotMet, CheckMet, CheckJudgement}, false},
		{"a refused write changes nothing", []harness.Event{
			evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(0)),
			evToolUse("b2", "Bash", "make lint"), evToolResult("b2", false, intp(0)),
			evToolUse("e1", "Write", "/ws/a.go"), evResultText("e1", true, true, nil, "denied"),
		}, []string{CheckMet, CheckMet, CheckJudgement}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProgress(Snapshot{MaxSteps: 100, Acceptance: newChecks(checks)}, deepseek.Price{})
			for _, ev := range tt.events {
				p, _ = fold(p, ev)
			}
			for i, c := range p.snap.Acceptance {
				if c.Status != tt.want[i] {
					t.Errorf("check %q: %s (%s), want %s", c.Check, c.Status, c.Why, tt.want[i])
				}
			}
			p.snap.Status = StatusDone
			if got := AcceptanceReady(p.snap); got != tt.ready {
				t.Errorf("ready %v, want %v: %+v", got, tt.ready, p.snap.Acceptance)
			}
			p.snap.Status = StatusError
			if AcceptanceReady(p.snap) {
				t.Error("a job that did not end done is ready")
			}
		})
	}
	if AcceptanceReady(Snapshot{Status: StatusDone, Acceptance: newChecks([]Check{{Check: "it works"}})}) {
		t.Error("checks without a command made a job ready")
	}
}

func TestHarnessTaskCarriesContextAndChecks(t *testing.T) {
	task := harnessTask(Snapshot{Task: "Fix the bug.", Context: "The CI fails on main.", Acceptance: newChecks([]Check{{Check: "tests pass", Command: "make test"}, {Check: "it reads well"}})})
	for _, want := range []string{"Fix the bug.", "Context from the caller:\nThe CI fails on main.", "- tests pass — run: make test\n", "- it reads well\n", "exactly that command"} {
		if !strings.Contains(task, want) {
			t.Errorf("task lacks %q:\n%s", want, task)
		}
	}
	if got := harnessTask(Snapshot{Task: "Fix the bug."}); got != "Fix the bug." {
		t.Errorf("a task without context or checks became %q", got)
	}
}

func TestValidateChecks(t *testing.T) {
	many := make([]Check, MaxChecks+1)
	for i := range many {
		many[i] = Check{Check: "c"}
	}
	for _, bad := range [][]Check{many, {{Check: " "}}, {{Check: "x", Command: "a\nb"}}, {{Check: strings.Repeat("x", 1001)}}} {
		if err := ValidateChecks(bad); err == nil {
			t.Errorf("%d checks accepted", len(bad))
		}
	}
	if err := ValidateChecks([]Check{{Check: "tests pass", Command: "go test ./..."}}); err != nil {
		t.Error(err)
	}
}

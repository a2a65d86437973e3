package jobs

import (
	"fmt"
	"strings"
)

// Check is one acceptance check a caller gives a job: a sentence, and
// optionally the command whose successful run is its evidence.
type Check struct {
	Check   string `json:"check"`
	Command string `json:"command,omitempty"`
}

// The limits of a job's acceptance.
const (
	MaxChecks       = 20
	maxCheckText    = 1000
	MaxContextBytes = 64 << 10
)

// The states of a check. The bridge runs nothing itself: a check with a
// command is met only by the job's own run of it, with exit 0, after the
// job's last change to the workspace; one without is the model's word.
const (
	CheckMet        = "met"         // its command's last run exited 0 after the job's last change
	CheckNotMet     = "not_met"     // its command's last run failed
	CheckNotChecked = "not_checked" // its command never ran, or not since the job's last change
	CheckJudgement  = "judgement"   // no command: the model's own judgement, never evidence
)

// CheckStatus is a check and what the job's tool calls say of it.
type CheckStatus struct {
	Check   string `json:"check" jsonschema:"the check, as the caller gave it"`
	Command string `json:"command,omitempty" jsonschema:"the command whose run is its evidence"`
	Status  string `json:"status" jsonschema:"met (its command's last run exited 0 after the job's last change to the workspace), not_met (its last run failed), not_checked (never run, or not since the job's last change), judgement (no command: only the model's word)"`
	Why     string `json:"why" jsonschema:"the evidence, in words"`
}

// ValidateChecks refuses checks the bridge could not hold the job to.
func ValidateChecks(checks []Check) error {
	if len(checks) > MaxChecks {
		return fmt.Errorf("acceptance: %d checks, at most %d", len(checks), MaxChecks)
	}
	for i, c := range checks {
		switch {
		case strings.TrimSpace(c.Check) == "":
			return fmt.Errorf("acceptance[%d]: check is empty: say what must hold", i)
		case len(c.Check) > maxCheckText || len(c.Command) > maxCheckText:
			return fmt.Errorf("acceptance[%d]: longer than %d bytes", i, maxCheckText)
		case strings.ContainsAny(c.Command, "\n\r"):
			return fmt.Errorf("acceptance[%d]: command is more than one line", i)
		}
	}
	return nil
}

// newChecks are the checks of a job that has done nothing yet (nil for
// none).
func newChecks(checks []Check) []CheckStatus {
	var out []CheckStatus
	for _, c := range checks {
		s := CheckStatus{Check: strings.TrimSpace(c.Check), Command: strings.TrimSpace(c.Command)}
		if s.Command == "" {
			s.Status, s.Why = CheckJudgement, "no command: only the model's own judgement, not evidence"
		} else {
			s.Status, s.Why = CheckNotChecked, "the job has not run it"
		}
		out = append(out, s)
	}
	return out
}

// ranCommand folds one finished command of the job into its checks: a
// check's own command sets its state; any other command, which may have
// changed the workspace (the bridge cannot tell which do), makes every met
// check not checked since.
func ranCommand(checks []CheckStatus, cmd string, c Command) {
	cmd = strings.TrimSpace(cmd)
	own := false
	for i := range checks {
		if checks[i].Command != "" && checks[i].Command == cmd {
			own = true
			switch {
			case c.succeeded():
				checks[i].Status, checks[i].Why = CheckMet, "the job ran it, exit 0, after its last change to the workspace"
			case c.failed():
				checks[i].Status, checks[i].Why = CheckNotMet, "its last run failed: "+c.Status()
			default:
				checks[i].Status, checks[i].Why = CheckNotChecked, "its last run has no exit status: "+c.Status()
			}
		}
	}
	if !own {
		changed(checks, "the command `"+oneLine(cmd, 120)+"` ran after it")
	}
}

// changed marks every met check not checked since a change (what says).
func changed(checks []CheckStatus, what string) {
	for i := range checks {
		if checks[i].Status == CheckMet {
			checks[i].Status, checks[i].Why = CheckNotChecked, "it passed, but "+what+" (a change to the workspace, as far as the bridge can tell)"
		}
	}
}

// AcceptanceReady is whether a job's checks hold on evidence: it is done,
// it has at least one check with a command, and each such check is met.
func AcceptanceReady(s Snapshot) bool {
	if s.Status != StatusDone {
		return false
	}
	withCommand := 0
	for _, c := range s.Acceptance {
		if c.Command == "" {
			continue
		}
		withCommand++
		if c.Status != CheckMet {
			return false
		}
	}
	return withCommand > 0
}

// harnessTask is the task the harness is given: the caller's, then its
// context, then the checks the bridge will read its tool calls against.
func harnessTask(s Snapshot) string {
	var b strings.Builder
	b.WriteString(s.Task)
	if strings.TrimSpace(s.Context) != "" {
		b.WriteString("\n\nContext from the caller:\n")
		b.WriteString(strings.TrimSpace(s.Context))
	}
	if len(s.Acceptance) > 0 {
		b.WriteString("\n\nAcceptance checks. The bridge reads them against your tool calls: a check with a command counts as met only if you run exactly that command with the Bash tool after your last change to the workspace and it exits 0; any other command run after it counts as a change.\n")
		for _, c := range s.Acceptance {
			b.WriteString("- " + c.Check)
			if c.Command != "" {
				b.WriteString(" — run: " + c.Command)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

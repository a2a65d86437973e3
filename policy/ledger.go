package policy

import "time"

// The verdicts of a job's ledger: what became of one tool call.
const (
	AllowedByRule  = "allowed_by_rule"
	AllowedByHuman = "allowed_by_human"
	DeniedByPolicy = "denied_by_policy"
	DeniedByHuman  = "denied_by_human"
	TimedOut       = "timed_out"
	NotOffered     = "not_offered"
	// Unanswered: the bridge stopped while the call waited for a human;
	// nobody denied it, and it did not run.
	Unanswered = "unanswered"
)

// Verdict is the approval service's record of one tool call, a line of the
// job's ledger (statedir.Dir.LedgerFile), which the registry reads to fill
// the job's ledger.
type Verdict struct {
	ToolUseID string `json:"tool_use_id"`
	Tool      string `json:"tool"`
	Summary   string `json:"summary"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason"`
	// Decided is when a decision that waited (a human's, a timeout) was
	// made; zero for one the rules made at once. A command's duration runs
	// from here, not from the call, so it leaves out the wait for a person.
	Decided time.Time `json:"decided,omitzero"`
}

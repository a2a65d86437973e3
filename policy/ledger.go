package policy

// The verdicts of a job's ledger: what became of one tool call.
const (
	AllowedByRule  = "allowed_by_rule"
	AllowedByHuman = "allowed_by_human"
	DeniedByPolicy = "denied_by_policy"
	DeniedByHuman  = "denied_by_human"
	TimedOut       = "timed_out"
	NotOffered     = "not_offered"
)

// LedgerFile is the name, in a job's harness dir, of the file the approval
// child appends one Verdict to per tool call it answers (JSON lines); the
// registry reads it to fill the job's ledger.
const LedgerFile = "ledger.jsonl"

// Verdict is the approval child's record of one tool call.
type Verdict struct {
	ToolUseID string `json:"tool_use_id"`
	Tool      string `json:"tool"`
	Summary   string `json:"summary"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason"`
}

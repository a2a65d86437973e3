package jobs

import (
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// StopReason is why a job ended, from a fixed vocabulary (docs/STATE.md);
// every ended job has one, and its status follows from it (StatusOf).
type StopReason string

// The stop reasons.
const (
	StopCompleted            StopReason = "completed"              // done: the harness's own successful result
	StopStepCeiling          StopReason = "step_ceiling"           // max_steps / BRIDGE_MAX_STEPS
	StopTimeCeiling          StopReason = "time_ceiling"           // timeout_seconds / BRIDGE_JOB_TIMEOUT_MS
	StopBudgetCeiling        StopReason = "budget_ceiling"         // BRIDGE_JOB_MAX_COST_USD or BRIDGE_JOB_MAX_TOKENS
	StopDailyBudget          StopReason = "daily_budget"           // BRIDGE_DAILY_MAX_COST_USD, or the day's spend unknown
	StopCancelledByCaller    StopReason = "cancelled_by_caller"    // deepseek_agent_cancel
	StopCancelledByOwner     StopReason = "cancelled_by_owner"     // bridgectl job kill
	StopInterruptedByRestart StopReason = "interrupted_by_restart" // the daemon stopped, reloaded or died
	StopModelError           StopReason = "model_error"            // DeepSeek refused or failed; ModelErrorClass says how
	StopHarnessFailed        StopReason = "harness_failed"         // the harness could not start, or exited without a result
	StopNoResult             StopReason = "no_result"              // the harness ended without a successful answer
	StopApprovalTimeout      StopReason = "approval_timeout"       // no result after a request no human answered in time
	StopProcessLimit         StopReason = "process_limit"          // BRIDGE_JOB_MAX_PROCESSES: the whole job was killed
	StopMemoryLimit          StopReason = "memory_limit"           // BRIDGE_JOB_MAX_MEMORY_MB: the whole job was killed
	StopDiskLimit            StopReason = "disk_limit"             // BRIDGE_JOB_MAX_DISK_MB: the whole job was killed
)

// StopReasons is the vocabulary, in the order the docs list it.
var StopReasons = []StopReason{
	StopCompleted, StopStepCeiling, StopTimeCeiling, StopBudgetCeiling, StopDailyBudget,
	StopCancelledByCaller, StopCancelledByOwner, StopInterruptedByRestart,
	StopModelError, StopHarnessFailed, StopNoResult, StopApprovalTimeout,
	StopProcessLimit, StopMemoryLimit, StopDiskLimit,
}

// limitStop is the stop of a run the watcher killed past one of its own
// bounds (harness.Breach).
func limitStop(b *harness.Breach) Stop {
	reason, setting := StopDiskLimit, "BRIDGE_JOB_MAX_DISK_MB"
	switch b.Bound {
	case harness.BoundProcesses:
		reason, setting = StopProcessLimit, "BRIDGE_JOB_MAX_PROCESSES"
	case harness.BoundMemory:
		reason, setting = StopMemoryLimit, "BRIDGE_JOB_MAX_MEMORY_MB"
	}
	return Stop{Reason: reason, Text: b.Text() + " (" + setting + "), so every process of the job was killed"}
}

// The classes of a model_error: what the upstream (DeepSeek, through the
// model proxy) said last.
const (
	ModelKeyRejected = "key_rejected" // 401: DEEPSEEK_API_KEY refused
	ModelBalance     = "balance"      // 402: the account is out of credit
	ModelRateLimit   = "rate_limit"   // 429, after the proxy's retries
	ModelOverload    = "overload"     // 503, after the proxy's retries
	ModelServerError = "server_error" // another 5xx
	ModelUnreachable = "unreachable"  // no answer at all
	ModelStreamCut   = "stream_cut"   // an answer that broke off
	ModelBadRequest  = "bad_request"  // another 4xx
)

// StatusOf is the end status a stop reason makes: done only for completed.
func StatusOf(r StopReason) Status {
	switch r {
	case StopCompleted:
		return StatusDone
	case StopCancelledByCaller, StopCancelledByOwner:
		return StatusCancelled
	case StopInterruptedByRestart:
		return StatusInterrupted
	}
	return StatusError
}

// Stop is a request to end a running job: why, and in words.
type Stop struct {
	Reason StopReason
	// Class is a model_error's upstream class (ModelKeyRejected, …).
	Class string
	Text  string
}

// approvalTimedOut reports whether a denied tool result is the approval
// child's answer to a request no human answered in time.
func approvalTimedOut(text string) bool {
	return strings.Contains(text, approvals.TimeoutReasonPrefix)
}

package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// AgentJobPayload is the structuredContent of every agent tool.
type AgentJobPayload struct {
	JobID         string             `json:"job_id" jsonschema:"the job's id; pass it to deepseek_agent_poll and deepseek_agent_cancel"`
	Status        string             `json:"status" jsonschema:"queued, running, waiting_approval, done, done_unverified (done, but the record of its changes is incomplete: the workspace needs a review), error, cancelled or interrupted"`
	Nonce         string             `json:"nonce,omitempty" jsonschema:"set only when status is done: quote it verbatim with the result"`
	Result        string             `json:"result,omitempty" jsonschema:"the agent's final answer; set only when status is done"`
	Error         string             `json:"error,omitempty" jsonschema:"why the job ended error, cancelled or interrupted"`
	Partial       *jobs.Partial      `json:"partial,omitempty" jsonschema:"what a job that did not finish had done; NOT a result"`
	Steps         int                `json:"steps" jsonschema:"tool calls so far"`
	LastTool      string             `json:"last_tool,omitempty" jsonschema:"the latest tool call, shortened"`
	ElapsedMS     int64              `json:"elapsed_ms" jsonschema:"milliseconds since the job was accepted"`
	Usage         jobs.Usage         `json:"usage" jsonschema:"tokens of the job's model calls"`
	CostUSD       float64            `json:"cost_usd" jsonschema:"the usage at DeepSeek prices, in US dollars"`
	FilesWritten  []string           `json:"files_written" jsonschema:"files the agent wrote or edited"`
	Commands      []jobs.Command     `json:"commands" jsonschema:"shell commands the agent ran, with their exit status when known; one waiting for approval is listed with the note that it has not run yet"`
	Approval      *jobs.ApprovalInfo `json:"approval,omitempty" jsonschema:"the request a human must answer while status is waiting_approval"`
	QueuePosition int                `json:"queue_position,omitempty" jsonschema:"1 = next to start; only while queued"`
	Quarantined   []Quarantined      `json:"quarantined,omitempty" jsonschema:"git dirs, hooks and rc files the job created or changed, which other programs would run outside the sandbox: moved aside at its end; tell the user"`
	AuditNote     string             `json:"audit_note,omitempty" jsonschema:"what the end-of-job audit of the workspace could not do"`

	// What the job ran as and under, and what became of each tool call.
	Model       string             `json:"model,omitempty" jsonschema:"the model the job runs"`
	Thinking    string             `json:"thinking,omitempty" jsonschema:"the thinking level the job runs at: off, low, high or max"`
	Policy      *policy.Enforced   `json:"policy,omitempty" jsonschema:"the policy enforced: the caller's, narrowed by the owner's floor (floor names its file, or none)"`
	Ledger      []jobs.LedgerEntry `json:"ledger" jsonschema:"the last 50 tool calls, each with its verdict and reason"`
	LedgerTotal int                `json:"ledger_total" jsonschema:"how many tool calls the ledger holds in all (the job's trace has every one)"`

	// The caller's acceptance checks, each with what the job's tool calls
	// say of it, and whether they hold on evidence.
	Acceptance      []jobs.CheckStatus `json:"acceptance,omitempty" jsonschema:"the acceptance checks given at the start, each with its status and evidence"`
	AcceptanceReady *bool              `json:"acceptance_ready,omitempty" jsonschema:"set when checks were given: true only when the job is done, has a check with a command, and every such check is met by the job's own run of its command after its last change"`

	// What was left out to fit the host, and how to fetch it.
	Omitted []Omitted `json:"omitted,omitempty" jsonschema:"parts left out of this payload to fit the host's limit on a result; each names the call that returns all of it"`

	// A review's findings (deepseek_review), read against its scope.
	Review *ReviewPayload `json:"review,omitempty" jsonschema:"set on a review job: its scope and, once done, the verdict and the findings the bridge read from the answer and checked against the scope"`

	// Sessions: the job this one continues, and whether it can be continued.
	Parent      string `json:"parent,omitempty" jsonschema:"the job this one continues (deepseek_agent_continue)"`
	CanContinue bool   `json:"can_continue,omitempty" jsonschema:"the job has ended and deepseek_agent_continue can resume its conversation"`

	Handoff
}

// Quarantined is one path the end-of-job audit moved aside.
type Quarantined struct {
	Path    string `json:"path" jsonschema:"where it was, relative to the workspace"`
	What    string `json:"what" jsonschema:"git dir, gitfile, git config, git hook, git info, hook file or runs-later file"`
	Change  string `json:"change" jsonschema:"created or changed"`
	MovedTo string `json:"moved_to,omitempty" jsonschema:"where it is now, relative to the workspace; empty when it could not be moved"`
	Restore string `json:"restore,omitempty" jsonschema:"the command, run in the workspace, that puts it back on purpose"`
	Error   string `json:"error,omitempty" jsonschema:"why it could not be moved or made harmless"`
}

// quarantined turns the snapshot's record into the payload's.
func quarantined(qs []sandbox.Quarantined) []Quarantined {
	var out []Quarantined
	for _, q := range qs {
		out = append(out, Quarantined{Path: q.Path, What: q.What, Change: q.Change, MovedTo: q.MovedTo, Restore: q.RestoreHint(), Error: q.Error})
	}
	return out
}

// Payload turns a snapshot into the structuredContent of the agent tools.
func Payload(s jobs.Snapshot, now time.Time) AgentJobPayload {
	p := AgentJobPayload{
		JobID: s.ID, Status: string(s.Status), Nonce: s.Nonce, Result: s.Result, Error: s.Error,
		Partial: s.Partial, Steps: s.Steps, LastTool: s.LastTool, ElapsedMS: s.Elapsed(now).Milliseconds(),
		Usage: s.Usage, CostUSD: s.CostUSD, FilesWritten: s.FilesWritten, Commands: s.Commands,
		Approval: s.Approval, QueuePosition: s.QueuePosition,
		Quarantined: quarantined(s.Quarantined), AuditNote: s.AuditNote,
		Model: s.Model, Thinking: s.Thinking, Policy: s.Policy, LedgerTotal: s.LedgerTotal,
		Ledger: jobs.LastLedger(s.Ledger, jobs.PayloadLedger),
		Parent: s.Parent, CanContinue: s.CanContinue(),
		Handoff: handoff(s),
	}
	if len(s.Acceptance) > 0 {
		ready := jobs.AcceptanceReady(s)
		p.Acceptance, p.AcceptanceReady = s.Acceptance, &ready
	}
	if s.Review != nil {
		p.Review = reviewPayload(s)
	}
	if !s.Status.Done() { // belt and braces: never a nonce or result off done
		p.Nonce, p.Result = "", ""
	}
	if p.FilesWritten == nil {
		p.FilesWritten = []string{}
	}
	if p.Commands == nil {
		p.Commands = []jobs.Command{}
	}
	return p
}

func agentResult(ctx context.Context, o AgentToolOptions, s jobs.Snapshot) *mcp.CallToolResult {
	return agentResultFor(ctx, o, Payload(s, o.now()))
}

// AgentText is the text part of an agent tool's answer, written for the
// calling model.
func AgentText(p AgentJobPayload) string {
	var b strings.Builder
	elapsed := time.Duration(p.ElapsedMS) * time.Millisecond
	switch jobs.Status(p.Status) {
	case jobs.StatusDone, jobs.StatusDoneUnverified:
		done := "done"
		if jobs.Status(p.Status) == jobs.StatusDoneUnverified {
			done = "done, but the record of its changes is incomplete (done_unverified)"
		}
		fmt.Fprintf(&b, "Job %s is %s (%s, %s, $%.4f).\n\nResult:\n%s\n\n", p.JobID, done, plural(p.Steps, "tool call"), elapsed.Round(time.Second), p.CostUSD, p.Result)
		fmt.Fprintf(&b, "Nonce: %s\nWhen you report this result, quote the nonce %s verbatim: it proves the result came from the bridge.", p.Nonce, p.Nonce)
		writeWork(&b, p)
		writeHandoff(&b, p)
	case jobs.StatusQueued:
		fmt.Fprintf(&b, "Job %s is queued (position %d). Nothing to report yet: do not describe any result. Call deepseek_agent_poll with job_id %q again.", p.JobID, p.QueuePosition, p.JobID)
	case jobs.StatusRunning:
		fmt.Fprintf(&b, "Job %s is running (%s so far, %s", p.JobID, plural(p.Steps, "tool call"), elapsed.Round(time.Second))
		if p.LastTool != "" {
			fmt.Fprintf(&b, ", last: %s", p.LastTool)
		}
		fmt.Fprintf(&b, "). Nothing to report yet: do not describe any result. Call deepseek_agent_poll with job_id %q again.", p.JobID)
	case jobs.StatusWaitingApproval:
		fmt.Fprintf(&b, "Job %s is waiting for a human to approve a step", p.JobID)
		if p.Approval != nil {
			fmt.Fprintf(&b, ": %s (request %s)", p.Approval.Summary, p.Approval.ID)
		}
		fmt.Fprintf(&b, ". Tell the user to run `bridgectl pending` in a terminal on the bridge's machine and approve or deny it. Nothing to report yet; call deepseek_agent_poll with job_id %q again afterwards.", p.JobID)
	default:
		fmt.Fprintf(&b, "Job %s ended %s (stop_reason: %s): %s\nThere is no result and no nonce. Do not present anything from this job as its result.", p.JobID, p.Status, p.StopReason, p.Error)
		if p.Partial != nil {
			fmt.Fprintf(&b, "\n\n%s.", p.Partial.Label)
			if len(p.Partial.Notes) > 0 {
				fmt.Fprintf(&b, "\nLast notes of the agent:\n- %s", strings.Join(p.Partial.Notes, "\n- "))
			}
			if len(p.Partial.ToolCalls) > 0 {
				fmt.Fprintf(&b, "\nTool calls: %s", tally(p.Partial.ToolCalls))
			}
			if len(p.Partial.FilesTouched) > 0 {
				fmt.Fprintf(&b, "\nFiles touched: %s", strings.Join(p.Partial.FilesTouched, ", "))
			}
		}
		writeWork(&b, p)
		writeHandoff(&b, p)
	}
	return b.String()
}

// plural spells a count with its noun: "1 tool call", "3 tool calls".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tally spells a count per tool, by name: "Bash 2, Read 1".
func tally(counts map[string]int) string {
	names := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %d", name, counts[name])
	}
	return strings.Join(parts, ", ")
}

func writeWork(b *strings.Builder, p AgentJobPayload) {
	writeReview(b, p.Review)
	if p.AcceptanceReady != nil {
		verdict := "NOT READY: not every check with a command is met by the job's own run of it"
		if *p.AcceptanceReady {
			verdict = "ready: every check with a command is met by the job's own run of it after its last change"
		}
		fmt.Fprintf(b, "\nAcceptance: %s.", verdict)
		for _, c := range p.Acceptance {
			fmt.Fprintf(b, "\n- [%s] %s", c.Status, c.Check)
			if c.Command != "" {
				fmt.Fprintf(b, " (`%s`)", c.Command)
			}
			fmt.Fprintf(b, ": %s", c.Why)
		}
	}
	if len(p.Quarantined) > 0 {
		b.WriteString("\nQuarantined (the job planted these where git, hooks or a shell would run them outside the sandbox; they were moved aside — tell the user):")
		for _, q := range p.Quarantined {
			fmt.Fprintf(b, "\n- %s %s (%s)", q.Change, q.Path, q.What)
			if q.MovedTo != "" {
				fmt.Fprintf(b, ": now %s; to put it back on purpose: %s", q.MovedTo, q.Restore)
			}
			if q.Error != "" {
				fmt.Fprintf(b, " [%s]", q.Error)
			}
		}
	}
	if p.AuditNote != "" {
		fmt.Fprintf(b, "\nWorkspace audit: %s", p.AuditNote)
	}
	for _, e := range p.Ledger {
		if !strings.HasPrefix(e.Verdict, "allowed") {
			fmt.Fprintf(b, "\nRefused (%s): %s — %s", e.Verdict, e.Summary, e.Reason)
		}
	}
	if len(p.FilesWritten) > 0 {
		fmt.Fprintf(b, "\nFiles written: %s", strings.Join(p.FilesWritten, ", "))
	}
	if len(p.Commands) > 0 {
		b.WriteString("\nCommands:")
		for _, c := range p.Commands {
			fmt.Fprintf(b, "\n- %s (%s)", c.Command, commandEvidence(c))
		}
	}
}

package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// AgentJobs is what the agent tools need from the job registry.
type AgentJobs interface {
	Start(ctx context.Context, req jobs.StartRequest) (jobs.Snapshot, error)
	Wait(ctx context.Context, id string, d time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error)
	CancelBy(ctx context.Context, id string, by jobs.StopReason) (jobs.Snapshot, error)
}

var _ AgentJobs = (*jobs.Registry)(nil)

// Limits of the agent tools.
const (
	DefaultPollWait = 20 * time.Second
	MaxPollWait     = 40 * time.Second
	cancelWait      = 15 * time.Second // how long cancel waits for the harness to be gone
	progressEvery   = time.Second      // at most one progress notification per interval
)

// AgentToolOptions tune the agent tools.
type AgentToolOptions struct {
	SyncWindow      time.Duration // BRIDGE_SYNC_WINDOW_MS: how long start waits for an inline result
	MaxSteps        int           // BRIDGE_MAX_STEPS, shown in the schema
	JobTimeout      time.Duration // BRIDGE_JOB_TIMEOUT_MS, shown in the schema
	Now             func() time.Time
	ProgressLimiter time.Duration    // 0 = progressEvery
	Models          deepseek.Catalog // the models a job may name (zero: the built-in list)
	// OwnerToken: a cancel whose _meta carries it under OwnerMetaKey is the
	// owner's (bridgectl job kill); "" = every cancel is the caller's.
	OwnerToken string
}

// AgentJobPayload is the structuredContent of every agent tool.
type AgentJobPayload struct {
	JobID         string             `json:"job_id" jsonschema:"the job's id; pass it to deepseek_agent_poll and deepseek_agent_cancel"`
	Status        string             `json:"status" jsonschema:"queued, running, waiting_approval, done, error, cancelled or interrupted"`
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
	Commands      []jobs.Command     `json:"commands" jsonschema:"shell commands the agent ran, with their exit status when known"`
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

// AgentStartTool is deepseek_agent_start.
func AgentStartTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_start",
		mcp.WithDescription(fmt.Sprintf("Hand DeepSeek a task that needs hands: an agent (Claude Code driven by DeepSeek) reads, edits and runs commands in a workspace directory the owner granted. "+
			"Blocks up to %d s; a job that finishes by then is returned inline, otherwise you get its job_id to pass to deepseek_agent_poll. "+
			"A result is real only when status is done and it carries a nonce: quote the nonce with it.", int(o.SyncWindow/time.Second))),
		mcp.WithTitleAnnotation("Start a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("task", mcp.Required(), mcp.Description("what the agent should do, self-contained: it sees only this text and the workspace")),
		mcp.WithString("workspace", mcp.Required(), mcp.Description("absolute path of an existing directory inside the owner's allowed roots (DEEPSEEK_ALLOWED_ROOTS)")),
		stepsArg(o, "job"), timeoutArg(o, "job"),
		modelArg(o.Models), thinkingArg(), policyArg(o),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a startArgs
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		maxSteps, timeout := a.ceilings()
		model, thinking, err := o.Models.Resolve(a.Model, a.Thinking)
		if err != nil {
			return startError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		if err := a.checkPolicy(); err != nil {
			return startError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		snap, err := j.Start(ctx, jobs.StartRequest{Task: a.Task, Workspace: a.Workspace,
			MaxSteps: maxSteps, Timeout: timeout,
			Model: model.ID, Thinking: thinking, Policy: a.Policy})
		if err != nil {
			return startError(err), nil
		}
		return waitInline(ctx, req, j, o, snap), nil
	}
	return tool, handler
}

// AgentPollTool is deepseek_agent_poll.
func AgentPollTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_poll",
		mcp.WithDescription("Check on an agent job started with deepseek_agent_start. Waits up to wait_seconds and returns as soon as the job settles. "+
			"Until status is done there is no result to report; on done, quote the nonce with the result."),
		mcp.WithTitleAnnotation("Poll a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the job_id deepseek_agent_start returned")),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithNumber("wait_seconds", mcp.Min(0), mcp.Max(MaxPollWait.Seconds()), mcp.DefaultNumber(DefaultPollWait.Seconds()),
			mcp.Description("how long to wait for the job to settle, 0 to 40 seconds (default 20)")),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID       string   `json:"job_id"`
			WaitSeconds *float64 `json:"wait_seconds"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		wait := DefaultPollWait
		if a.WaitSeconds != nil {
			wait = time.Duration(*a.WaitSeconds * float64(time.Second))
		}
		p := newProgress(ctx, req, o)
		defer p.stop()
		wctx, onChange, cancel := untilApproval(ctx, p.report)
		defer cancel()
		snap, err := j.Wait(wctx, strings.TrimSpace(a.JobID), wait, onChange)
		if err != nil {
			return lookupError(err), nil
		}
		return agentResult(snap, o.now()), nil
	}
	return tool, handler
}

// AgentCancelTool is deepseek_agent_cancel.
func AgentCancelTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_cancel",
		mcp.WithDescription("Stop an agent job: its harness and every process it started are killed and the job ends as cancelled, without a result. A finished job is left as it is."),
		mcp.WithTitleAnnotation("Cancel a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the job_id deepseek_agent_start returned")),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID string `json:"job_id"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		cctx, cancel := context.WithTimeout(ctx, cancelWait)
		defer cancel()
		snap, err := j.CancelBy(cctx, strings.TrimSpace(a.JobID), cancelledBy(req, o.OwnerToken))
		if err != nil {
			return lookupError(err), nil
		}
		return agentResult(snap, o.now()), nil
	}
	return tool, handler
}

func (o AgentToolOptions) withDefaults() AgentToolOptions {
	if o.SyncWindow <= 0 {
		o.SyncWindow = config.DefaultSyncWindow
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = config.DefaultMaxSteps
	}
	if o.Models.Models == nil {
		o.Models = builtinCatalog("")
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = config.DefaultJobTimeout
	}
	if o.ProgressLimiter <= 0 {
		o.ProgressLimiter = progressEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o AgentToolOptions) now() time.Time { return o.Now() }

func startError(err error) *mcp.CallToolResult {
	switch {
	case errors.Is(err, jobs.ErrWorkspace), errors.Is(err, jobs.ErrBadInput), errors.Is(err, jobs.ErrQueueFull), errors.Is(err, jobs.ErrClosed),
		errors.Is(err, jobs.ErrWorkspaceBusy):
		return mcp.NewToolResultError("The job was not started. " + err.Error())
	default:
		return mcp.NewToolResultError("The job was not started: " + err.Error())
	}
}

func lookupError(err error) *mcp.CallToolResult {
	if errors.Is(err, jobs.ErrUnknownJob) {
		return mcp.NewToolResultError(err.Error() + ". Check the job_id; finished jobs stay pollable only for BRIDGE_RESULT_TTL_MS after they end.")
	}
	return mcp.NewToolResultError(err.Error())
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
	if s.Status != jobs.StatusDone { // belt and braces: never a nonce or result off done
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

func agentResult(s jobs.Snapshot, now time.Time) *mcp.CallToolResult {
	p := Payload(s, now)
	return mcp.NewToolResultStructured(p, AgentText(p))
}

// AgentText is the text part of an agent tool's answer, written for the
// calling model.
func AgentText(p AgentJobPayload) string {
	var b strings.Builder
	elapsed := time.Duration(p.ElapsedMS) * time.Millisecond
	switch jobs.Status(p.Status) {
	case jobs.StatusDone:
		fmt.Fprintf(&b, "Job %s is done (%s, %s, $%.4f).\n\nResult:\n%s\n\n", p.JobID, plural(p.Steps, "tool call"), elapsed.Round(time.Second), p.CostUSD, p.Result)
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

// progress turns registry changes into notifications/progress for one
// blocking call (step count, last tool), at most one per ProgressLimiter
// interval, through the server's progress reporter (which also keeps the
// stream alive while nothing changes). Its goroutine ends with stop.
type progress struct {
	send    func(n int, msg string)
	updates chan jobs.Snapshot
	done    chan struct{}
	ended   chan struct{}
}

func newProgress(ctx context.Context, req mcp.CallToolRequest, o AgentToolOptions) *progress {
	if progressToken(req) == nil {
		p := &progress{ended: make(chan struct{})}
		close(p.ended)
		return p
	}
	rep := newProgressReporter(ctx, req)
	return startProgress(ctx, o, func(n int, msg string) { rep.Report(float64(n), 0, msg) })
}

// startProgress runs the progress loop with send as its only output.
func startProgress(ctx context.Context, o AgentToolOptions, send func(n int, msg string)) *progress {
	p := &progress{send: send, updates: make(chan jobs.Snapshot, 1), done: make(chan struct{}), ended: make(chan struct{})}
	go p.loop(ctx, o)
	return p
}

func (p *progress) report(s jobs.Snapshot) {
	if p.send == nil {
		return
	}
	select { // keep only the latest
	case p.updates <- s:
	default:
		select {
		case <-p.updates:
		default:
		}
		select {
		case p.updates <- s:
		default:
		}
	}
}

func (p *progress) loop(ctx context.Context, o AgentToolOptions) {
	defer close(p.ended)
	n := 0
	var last jobs.Snapshot
	var lastSent time.Time
	pending := false
	limiter := time.NewTimer(0)
	defer limiter.Stop()
	send := func() {
		n++
		p.send(n, progressMessage(last))
		lastSent, pending = time.Now(), false
	}
	for {
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case s := <-p.updates:
			last, pending = s, true
			if wait := o.ProgressLimiter - time.Since(lastSent); wait <= 0 {
				send()
			} else {
				limiter.Reset(wait)
			}
		case <-limiter.C:
			if pending {
				send()
			}
		}
	}
}

func (p *progress) stop() {
	select {
	case <-p.ended:
		return
	default:
	}
	close(p.done)
	<-p.ended
}

func progressMessage(s jobs.Snapshot) string {
	msg := fmt.Sprintf("job %s %s: %s", s.ID, s.Status, plural(s.Steps, "tool call"))
	if s.Status == jobs.StatusQueued {
		msg += fmt.Sprintf(", queue position %d", s.QueuePosition)
	}
	if s.LastTool != "" {
		msg += ", last " + s.LastTool
	}
	if s.Approval != nil {
		msg += ", waiting for approval: " + s.Approval.Summary
	}
	return msg
}

// Package prompt answers an agent job's permission prompts. The approval
// child (RunChild) is the stdio MCP server Claude Code starts as its
// permission prompt tool (--permission-prompt-tool mcp__bridge__approve);
// it decides nothing and forwards each tool call to the daemon's approval
// service (Service), over loopback with the job's token. There each call is
// classified by approvals/rules from the job's config the daemon holds in
// memory; what a human must decide is queued in approvals and waited for;
// the answer goes back through the child to Claude Code.
package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ServerName and ToolName make the harness flag
// `--permission-prompt-tool mcp__bridge__approve`.
const (
	ServerName = "bridge"
	ToolName   = "approve"
	ToolFlag   = "mcp__" + ServerName + "__" + ToolName
)

// Answer is the permission prompt tool's reply, as Claude Code expects it.
type Answer struct {
	Behavior     string         `json:"behavior"` // "allow" or "deny"
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
	Message      string         `json:"message,omitempty"`
}

func allowAnswer(input map[string]any) Answer {
	if input == nil {
		input = map[string]any{}
	}
	return Answer{Behavior: "allow", UpdatedInput: input}
}

func denyAnswer(msg string) Answer { return Answer{Behavior: "deny", Message: msg} }

// Prompter answers permission prompts for one job.
type Prompter struct {
	cfg   Config
	dir   statedir.Dir
	queue *approvals.Queue
	log   zerolog.Logger
	// decided, when set, sees how each queued request ended.
	decided func(approvals.PendingRequest, approvals.Decision)

	// asked are the tool_use_ids the job has asked about: a second question
	// with one is refused, so that no forged question can write the
	// ledger's verdict for a real call (its first line wins).
	mu    sync.Mutex
	asked map[string]bool
	// auditInput counts the input bytes the job's audit records kept, up to
	// auditInputBudget (0: maxJobAuditInput).
	auditInput       int64
	auditInputBudget int64
	// waiting is what this job's questions waiting for a person weigh, up
	// to waitingShare (0: maxJobWaitingInputs) of the daemon's bound. mu
	// guards asked and every count here.
	waiting      int64
	waitingShare int64
}

// maxAsked bounds the tool_use_ids a job's Prompter remembers; past it,
// every question with an id is refused.
const maxAsked = 100_000

// firstAsk records toolUseID, and reports whether it is new.
func (p *Prompter) firstAsk(toolUseID string) bool {
	if toolUseID == "" {
		return true // the ledger keys by id: a call without one writes no line
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked == nil {
		p.asked = map[string]bool{}
	}
	if p.asked[toolUseID] || len(p.asked) >= maxAsked {
		return false
	}
	p.asked[toolUseID] = true
	return true
}

// testHookPending, when set by a test, sees each request once it is queued.
var testHookPending func(approvals.PendingRequest)

// NewPrompter opens the state dir and the queue for cfg.
func NewPrompter(cfg Config, log zerolog.Logger) (*Prompter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The daemon made the dir; the prompter only uses it.
	dir, err := statedir.At(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir.Approvals()); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("the state dir's approval queue %s is not there: %v", dir.Approvals(), err)
	}
	q := approvals.NewQueue(dir, log)
	if testHookPending != nil {
		q.Notify(testHookPending)
	}
	p := &Prompter{cfg: cfg, dir: dir, queue: q, log: log}
	q.KeepInput(p.keptInput)
	return p, nil
}

// Answer classifies one tool call and, when a human must decide, queues it
// and waits. Rules' denials and every non-approval of a queued request become
// a deny with the instruction not to work around it. With approval off (the
// config's mode, or the flag file) an "ask" is allowed without asking, said
// loudly in the log and the audit log; a rules' deny still stands, and the OS
// sandbox still applies. Nothing is allowed unless its audit records were
// written: a call whose record cannot be written (a full or read-only state
// dir) is denied, and the log says so.
func (p *Prompter) Answer(ctx context.Context, req rules.Request) Answer {
	return p.AnswerCall(ctx, req, "", nil)
}

// AnswerCall is Answer for the tool call toolUseID (Claude Code's id of it):
// its verdict goes to the job's ledger under that id. view, when set, is the
// rules' verdict on the call in the job's own view of the filesystem (the
// approval child's, inside the jail): the stricter of it and the daemon's
// own is the verdict (rules.Stricter), since a path can resolve elsewhere
// in the job's overlay or jail than it does here.
func (p *Prompter) AnswerCall(ctx context.Context, req rules.Request, toolUseID string, view *rules.Verdict) Answer {
	if !p.firstAsk(toolUseID) {
		// The record shows what the refused question asked, as the daemon
		// read it: a forged first question under a real call's id is on
		// record beside the real one.
		_ = p.record(approvals.AuditRecord{Event: approvals.EventRefused, JobID: p.cfg.JobID, Tool: req.Tool,
			Summary: rules.Summarize(req), Input: approvals.DisplayInput(req.Input),
			Reason: "refused a second question for tool_use_id " + toolUseID + ": Claude Code asks once per call", By: "bridge"})
		return denyAnswer("Denied: this tool call was already asked about. Do not try to work around this denial; report it in your final answer.")
	}
	v := rules.Classify(req, p.cfg.rules())
	if view != nil {
		if s := rules.Stricter(v, *view); s != v {
			// The decision and its reason are the view's; what the call
			// is (its summary) is always the daemon's own reading.
			s.Reason, s.Summary = "in the job's view: "+s.Reason, v.Summary
			v = s
		}
	}
	ledger := func(verdict, reason string) { p.ledger(toolUseID, req.Tool, v.Summary, verdict, reason, time.Time{}) }
	if err := p.record(approvals.AuditRecord{Event: approvals.EventRequest, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Verdict: v.Decision, Reason: v.Reason}); err != nil {
		ledger(policy.DeniedByPolicy, "its audit record could not be written")
		return p.unrecorded(req, v, err)
	}
	switch v.Decision {
	case rules.Allow:
		if err := p.record(approvals.AuditRecord{Event: approvals.EventAuto, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Input: approvals.DisplayInput(req.Input), Decision: rules.Allow, Reason: v.Reason, By: "rules"}); err != nil {
			ledger(policy.DeniedByPolicy, "its audit record could not be written")
			return p.unrecorded(req, v, err)
		}
		ledger(policy.AllowedByRule, v.Reason)
		return allowAnswer(req.Input)
	case rules.Ask:
	default:
		// A denial stands whether or not its record lands.
		_ = p.record(approvals.AuditRecord{Event: approvals.EventAuto, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Input: approvals.DisplayInput(req.Input), Decision: rules.Deny, Reason: v.Reason, By: "rules"})
		ledger(policy.DeniedByPolicy, v.Reason)
		return denyAnswer("Denied by the bridge's approval rules: " + v.Reason + ". Do not try to work around this denial; report it in your final answer.")
	}
	if src := p.approvalOffSource(); src != "" {
		reason := "HUMAN APPROVAL IS OFF (" + src + "): allowed without asking a human; the OS sandbox still applies. The rules said: " + v.Reason
		if err := p.record(approvals.AuditRecord{Event: approvals.EventApprovalOff, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Verdict: rules.Ask, Decision: rules.Allow, Reason: reason, By: src}); err != nil {
			ledger(policy.DeniedByPolicy, "its audit record could not be written")
			return p.unrecorded(req, v, err)
		}
		p.log.Warn().Str("job", p.cfg.JobID).Str("tool", req.Tool).Str("summary", v.Summary).Msg(reason)
		ledger(policy.AllowedByRule, reason)
		return allowAnswer(req.Input)
	}
	// The input stays in memory until a person answers: what every job's
	// waiting questions hold is bounded across the daemon.
	release, why := p.holdWaiting(inputSize(req.Input))
	if why != "" {
		reason := why + " waiting for a person"
		_ = p.record(approvals.AuditRecord{Event: approvals.EventRefused, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Reason: reason, By: "bridge"})
		ledger(policy.DeniedByPolicy, reason)
		return denyAnswer("Denied: " + reason + "; ask again once those are answered, or make the call smaller. Do not try to work around this denial; report it in your final answer.")
	}
	d, err := p.queue.Submit(ctx, p.cfg.JobID, req, v, p.cfg.Timeout)
	release()
	if err != nil {
		p.log.Error().Err(err).Str("job", p.cfg.JobID).Msg("approval request failed: denied")
	}
	if d.Kind == approvals.KindHuman {
		verb := "denied"
		if d.Approved {
			verb = "approved"
		}
		channel, via := d.Channel, "bridgectl"
		switch channel {
		case approvals.ChannelHost:
			via = "the MCP host"
		case "":
			channel = approvals.ChannelTerminal
		}
		p.log.Warn().Str("approval", d.ID).Str("job", p.cfg.JobID).Str("tool", req.Tool).Str("summary", v.Summary).Str("by", d.By).Str("channel", channel).
			Msg("approval " + d.ID + " " + verb + " by " + d.By + " (" + via + "): " + v.Summary)
	}
	if p.decided != nil && d.ID != "" {
		p.decided(approvals.PendingRequest{ID: d.ID, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary}, d)
	}
	// What follows was decided after a wait: the verdict keeps when.
	ledger = func(verdict, reason string) {
		p.ledger(toolUseID, req.Tool, v.Summary, verdict, reason, d.Decided)
	}
	switch {
	case d.Kind == approvals.KindShutdown:
		ledger(policy.Unanswered, d.Reason)
	case d.Approved:
		ledger(policy.AllowedByHuman, humanReason(d, "approved"))
		return allowAnswer(req.Input)
	case d.Kind == approvals.KindTimeout:
		ledger(policy.TimedOut, "nobody answered within "+p.cfg.Timeout.String()+"; the rules said: "+v.Reason)
	case d.Kind == approvals.KindHuman:
		ledger(policy.DeniedByHuman, humanReason(d, "denied"))
	default:
		ledger(policy.DeniedByPolicy, strings.TrimSuffix(d.Message(), " Do not try to work around this denial; report it in your final answer."))
	}
	return denyAnswer(d.Message())
}

// humanReason says who decided and why.
func humanReason(d approvals.Decision, what string) string {
	r := what
	if d.By != "" {
		r += " by " + d.By
	}
	if d.Reason != "" {
		r += ": " + d.Reason
	}
	return r
}

// ledger appends one verdict to the job's ledger file. A verdict that cannot
// be written is logged; the audit log still holds the call.
func (p *Prompter) ledger(toolUseID, tool, summary, verdict, reason string, decided time.Time) {
	if p.cfg.Ledger == "" || toolUseID == "" {
		return
	}
	b, err := json.Marshal(policy.Verdict{ToolUseID: toolUseID, Tool: approvals.ClipText(tool, 128), Summary: rules.Clip(summary), Verdict: verdict, Reason: approvals.ClipText(reason, 4<<10), Decided: decided})
	if err == nil {
		err = statedir.AppendLine(p.cfg.Ledger, b)
	}
	if err != nil {
		p.log.Warn().Err(err).Str("job", p.cfg.JobID).Msg("could not write the verdict to the job's ledger")
	}
}

// record appends one audit record; the error says it is not on record.
// record appends r to the audit log. The tool inputs one job's records keep
// are bounded (auditInputBudget): past it a record keeps the summary and
// says its input was not kept, so a job asking 20 questions a second with
// 64 KiB inputs cannot grow the log by megabytes a second for hours.
func (p *Prompter) record(r approvals.AuditRecord) error {
	r.Input = p.keptInput(r.Input)
	return approvals.AppendAudit(p.dir, r)
}

// keptInput is what an audit record keeps of in: in itself while the job's
// budget lasts (it spends it), then a note that it was not kept. The queue's
// pending records go through it too.
func (p *Prompter) keptInput(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	b, _ := json.Marshal(in)
	p.mu.Lock()
	defer p.mu.Unlock()
	budget := p.auditInputBudget
	if budget == 0 {
		budget = maxJobAuditInput
	}
	if p.auditInput+int64(len(b)) > budget {
		return map[string]any{approvals.OmittedInputKey: fmt.Sprintf("not kept: this job's audit records already hold %d MiB of tool inputs", budget>>20)}
	}
	p.auditInput += int64(len(b))
	return in
}

// maxWaitingInputs bounds the bytes of the inputs of questions waiting for a
// person, across the daemon (each is held until it is answered).
const maxWaitingInputs = 128 << 20

// waitingInputs holds what waiting questions' inputs weigh (a test may
// replace it).
var waitingInputs = semaphore.NewWeighted(maxWaitingInputs)

// maxJobWaitingInputs is one job's share of maxWaitingInputs: a job cannot
// hold the whole bound and have every other job's questions denied.
const maxJobWaitingInputs = 32 << 20

// holdWaiting takes size from this job's share and from the daemon's bound
// for a question that waits for a person; release gives both back. why,
// when not "", says which bound it would pass (and nothing is held).
func (p *Prompter) holdWaiting(size int64) (release func(), why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	share := p.waitingShare
	if share == 0 {
		share = maxJobWaitingInputs
	}
	if p.waiting+size > share {
		return nil, fmt.Sprintf("this job already holds %d MiB of tool inputs", share>>20)
	}
	if !waitingInputs.TryAcquire(size) {
		return nil, fmt.Sprintf("the bridge already holds %d MiB of tool inputs", maxWaitingInputs>>20)
	}
	p.waiting += size
	return func() {
		waitingInputs.Release(size)
		p.mu.Lock()
		p.waiting -= size
		p.mu.Unlock()
	}, ""
}

// inputSize is what an input weighs, as JSON (at least 1).
func inputSize(in map[string]any) int64 {
	b, _ := json.Marshal(in)
	return int64(len(b)) + 1
}

// maxJobAuditInput bounds the bytes of tool inputs one job's audit records
// keep.
const maxJobAuditInput = 32 << 20

// unrecorded denies a call whose audit record could not be written, and
// says so in the log (the approval child's stderr, which Claude Code keeps
// with the job) and, through the state dir's mark, in `bridgectl status`.
func (p *Prompter) unrecorded(req rules.Request, v rules.Verdict, err error) Answer {
	p.log.Error().Err(err).Str("job", p.cfg.JobID).Str("tool", req.Tool).Str("summary", v.Summary).
		Msg("DENIED: the audit record of this tool call could not be written, and nothing runs unrecorded; free space in the state dir (`bridgectl status` says more)")
	return denyAnswer("Denied: the bridge could not write this tool call's audit record (its state dir is full or read-only), and nothing runs unrecorded. Do not try to work around this denial; report it in your final answer.")
}

func (p *Prompter) approvalOffSource() string {
	switch {
	case p.cfg.mode() == approvals.ModeOff:
		return "BRIDGE_CC_APPROVAL=off"
	case approvals.ApprovalOff(p.dir):
		return "flag " + p.dir.ApprovalOffFlag()
	}
	return ""
}

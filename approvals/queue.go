// Package approvals holds the tool calls the rules send to a human until one
// decides: the file-based queue in the state dir that the approval child
// submits to and bridgectl answers (Queue), the JSONL audit log of every
// verdict and decision, and the approval-off switch. The rules themselves are
// in approvals/rules, the approval child in approvals/prompt. Everything
// fails closed: no answer means deny.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Errors of Queue.Decide; test with errors.Is.
var (
	ErrUnknownID      = errors.New("unknown approval id")
	ErrExpired        = errors.New("approval request expired, cannot be approved")
	ErrAlreadyDecided = errors.New("approval request already decided")
)

// Decision kinds.
const (
	KindHuman   = "human"
	KindTimeout = "timeout"
	KindCancel  = "cancel"
	KindCorrupt = "corrupt"
	// KindShutdown: the bridge stopped while the request waited; nobody
	// decided it (a deny for the harness, "unanswered" on the job's ledger).
	KindShutdown = "shutdown"
)

// ErrShutdown is the cause of a Submit context the daemon ends because it
// stops: the request is recorded as unanswered, not as denied by anyone.
var ErrShutdown = errors.New("the bridge is stopping")

// TimeoutReasonPrefix starts the reason of a timeout's deny, which reaches
// the job's model (and its trace) as the tool call's error.
const TimeoutReasonPrefix = "no answer from the owner within"

// PendingRequest is a tool call waiting for a human: <id>.request.json.
type PendingRequest struct {
	Version int            `json:"version"`
	ID      string         `json:"id"`
	JobID   string         `json:"job_id"`
	Tool    string         `json:"tool"`
	Input   map[string]any `json:"input"`
	Summary string         `json:"summary"`
	Reason  string         `json:"reason"` // why it needs a human
	Created time.Time      `json:"created"`
	Expires time.Time      `json:"expires"`
}

// Decision is how a queued request ended.
type Decision struct {
	ID       string `json:"id"`
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
	By       string `json:"by,omitempty"`
	Kind     string `json:"kind"` // human, timeout, cancel, corrupt
	// Channel is where a human answered: ChannelTerminal or ChannelHost
	// ("" for every other kind, and for a decision of an older build).
	Channel string    `json:"channel,omitempty"`
	Decided time.Time `json:"decided"`
}

// The channels a person answers through.
const (
	ChannelTerminal = "terminal" // bridgectl approve / deny / approve --watch
	ChannelHost     = "host"     // the MCP host's user, asked by the daemon (elicitation)
)

// Message is the text the model gets for a denial: the reason, and the
// instruction not to work around it.
func (d Decision) Message() string {
	if d.Approved {
		return ""
	}
	reason := strings.TrimRight(strings.TrimSpace(d.Reason), ".")
	if reason == "" {
		reason = "no reason given"
	}
	var who string
	switch d.Kind {
	case KindHuman:
		who = "Denied by the owner: " + reason
		if d.Channel == ChannelHost {
			who = "Denied by the user of the MCP host that polls this job: " + reason
		}
	default:
		who = "Denied: " + reason
	}
	return who + ". Do not try to work around this denial; report it in your final answer."
}

// decisionFile is <id>.decision.json. Approved is a pointer so a file
// without it is malformed rather than a silent "false".
type decisionFile struct {
	Version  int       `json:"version"`
	ID       string    `json:"id"`
	Approved *bool     `json:"approved"`
	Reason   string    `json:"reason"`
	By       string    `json:"by"`
	Kind     string    `json:"kind"`
	Channel  string    `json:"channel,omitempty"`
	Decided  time.Time `json:"decided"`
}

// Queue is the approval queue in <state>/approvals: the approval child
// submits requests and waits; bridgectl (or the daemon) decides them. A
// request is decided exactly once: the decision file is created with a hard
// link, which fails if one exists, so a human, a timeout and a cancel can race
// and only the first wins.
type Queue struct {
	dir     statedir.Dir
	log     zerolog.Logger
	minPoll time.Duration
	maxPoll time.Duration
	notify  func(PendingRequest)
	keep    func(map[string]any) map[string]any
}

// NewQueue returns the queue of the state dir; log gets one line per event
// (the audit log gets them too).
func NewQueue(dir statedir.Dir, log zerolog.Logger) *Queue {
	return &Queue{dir: dir, log: log, minPoll: 10 * time.Millisecond, maxPoll: 250 * time.Millisecond}
}

// Notify makes Submit call f with each request once it is queued, before it
// waits, so a waiter in the same process needs no polling. Call it before
// the queue is used.
func (q *Queue) Notify(f func(PendingRequest)) { q.notify = f }

// KeepInput sets what a pending record keeps of a request's input (the
// request file, which a person reads, keeps it all); by default, all of it.
func (q *Queue) KeepInput(f func(map[string]any) map[string]any) { q.keep = f }

func (q *Queue) requestPath(id string) string {
	return filepath.Join(q.dir.Approvals(), id+".request.json")
}

func (q *Queue) decisionPath(id string) string {
	return filepath.Join(q.dir.Approvals(), id+".decision.json")
}

// Audit appends r to the audit log. A write error is logged and returned:
// a denial stands without its record, but what would allow a call must not
// go on without it.
func (q *Queue) Audit(r AuditRecord) error {
	err := AppendAudit(q.dir, r)
	if err != nil {
		q.log.Error().Err(err).Str("event", r.Event).Msg("audit log write failed")
	}
	return err
}

// Submit queues req (classified as v) for a human and blocks until it is
// decided. It always returns a Decision; anything but a human approval is a
// denial: no answer within timeout, ctx ending (the job was cancelled or the
// harness went away), a cancel from CancelJob, or a decision file that is
// corrupt or malformed. The error reports a request that could not be queued.
func (q *Queue) Submit(ctx context.Context, jobID string, req rules.Request, v rules.Verdict, timeout time.Duration) (Decision, error) {
	if timeout <= 0 {
		return Decision{Kind: KindTimeout, Reason: "no approval timeout configured", Decided: time.Now().UTC()},
			fmt.Errorf("approval timeout must be positive, got %s", timeout)
	}
	// An id from ids.New is all ids.Valid accepts, so it can never name
	// another file.
	id, err := ids.New()
	if err != nil {
		return Decision{Kind: KindCorrupt, Reason: "could not queue the request", Decided: time.Now().UTC()}, fmt.Errorf("approval id: %w", err)
	}
	now := time.Now().UTC()
	pr := PendingRequest{Version: statedir.FormatVersion, ID: id, JobID: jobID, Tool: req.Tool, Input: DisplayInput(req.Input),
		Summary: ClipText(v.Summary, maxRecordText), Reason: ClipText(v.Reason, maxRecordText), Created: now, Expires: now.Add(timeout)}
	// On record before a human can see it: an approval of a request the
	// audit log does not hold would let a call run unrecorded.
	exp := pr.Expires
	kept := pr.Input
	if q.keep != nil {
		kept = q.keep(kept)
	}
	if err := q.Audit(AuditRecord{Event: EventPending, ID: id, JobID: jobID, Tool: req.Tool, Summary: v.Summary, Input: kept, Verdict: v.Decision, Reason: v.Reason, Expires: &exp}); err != nil {
		return Decision{ID: id, Kind: KindCorrupt, Reason: "the bridge could not write the audit record of the request, and nothing runs unrecorded", Decided: now}, fmt.Errorf("queue approval: %w", err)
	}
	if err := statedir.WriteJSON(q.requestPath(id), pr); err != nil {
		q.Audit(AuditRecord{Event: EventCorrupt, ID: id, JobID: jobID, Tool: req.Tool, Summary: v.Summary, Decision: rules.Deny, Reason: "could not queue the request for a human: " + writeCause(err)})
		return Decision{ID: id, Kind: KindCorrupt, Reason: "could not queue the request for a human", Decided: now}, fmt.Errorf("queue approval: %w", err)
	}
	if q.notify != nil {
		q.notify(pr)
	}
	q.log.Warn().Str("approval", id).Str("job", jobID).Str("tool", req.Tool).Str("summary", v.Summary).
		Msg("waiting for a human: bridgectl approve " + id)

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := q.minPoll
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrShutdown) {
				return q.finish(pr, KindShutdown, "the bridge stopped while this request waited for a human; nobody answered it", EventShutdown), nil
			}
			return q.finish(pr, KindCancel, "the job was cancelled or its harness went away while waiting for approval", EventCancel), nil
		case <-deadline.C:
			return q.finish(pr, KindTimeout, fmt.Sprintf("%s %s", TimeoutReasonPrefix, timeout), EventTimeout), nil
		case <-tick.C:
		}
		d, found, err := q.readDecision(id)
		if err != nil {
			return q.corrupt(pr, err), nil
		}
		if found && d.Approved {
			// The child records what it lets run itself: a decision file
			// Decide did not write (another process of the user) would
			// otherwise run a call whose allow is nowhere in the log.
			if err := q.Audit(AuditRecord{Event: EventApplied, ID: id, JobID: jobID, Tool: req.Tool, Summary: v.Summary, Decision: rules.Allow, By: d.By,
				Reason: "the approval service applies the decision by " + d.By}); err != nil {
				return Decision{ID: id, Kind: KindCorrupt, Reason: "the bridge could not write the audit record of the approval, and nothing runs unrecorded", Decided: time.Now().UTC()}, fmt.Errorf("apply approval: %w", err)
			}
		}
		if found {
			return d, nil
		}
		tick.Reset(poll)
		poll = min(2*poll, q.maxPoll)
	}
}

// finish claims a denial of kind for pr, unless a decision already exists;
// then that one stands (but a cancelled job is never told "allow").
func (q *Queue) finish(pr PendingRequest, kind, reason, event string) Decision {
	d, claimed, err := q.claim(pr.ID, false, reason, kind, kind, "")
	if err != nil {
		q.log.Error().Err(err).Str("approval", pr.ID).Msg("could not record the decision")
		d = Decision{ID: pr.ID, Kind: kind, Reason: reason, By: kind, Decided: time.Now().UTC()}
		claimed = true
	}
	if !claimed {
		existing, found, rerr := q.readDecision(pr.ID)
		switch {
		case rerr != nil:
			return q.corrupt(pr, rerr)
		case found && ((kind != KindCancel && kind != KindShutdown) || !existing.Approved):
			return existing
		}
		d = Decision{ID: pr.ID, Kind: kind, Reason: reason, By: kind, Decided: time.Now().UTC()}
	}
	decision, what := rules.Deny, "denied: "
	if kind == KindShutdown {
		decision, what = "", "unanswered: "
	}
	q.Audit(AuditRecord{Event: event, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: decision, Reason: reason, By: kind})
	q.log.Warn().Str("approval", pr.ID).Str("job", pr.JobID).Str("kind", kind).Msg(what + reason)
	return d
}

func (q *Queue) corrupt(pr PendingRequest, err error) Decision {
	reason := "the decision file was corrupt or malformed (" + err.Error() + ")"
	q.Audit(AuditRecord{Event: EventCorrupt, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: rules.Deny, Reason: reason})
	q.log.Error().Str("approval", pr.ID).Err(err).Msg("corrupt decision file: denied")
	return Decision{ID: pr.ID, Kind: KindCorrupt, Reason: reason, Decided: time.Now().UTC()}
}

package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

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
)

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
	ID       string    `json:"id"`
	Approved bool      `json:"approved"`
	Reason   string    `json:"reason,omitempty"`
	By       string    `json:"by,omitempty"`
	Kind     string    `json:"kind"` // human, timeout, cancel, corrupt
	Decided  time.Time `json:"decided"`
}

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
}

// NewQueue returns the queue of the state dir; log gets one line per event
// (the audit log gets them too).
func NewQueue(dir statedir.Dir, log zerolog.Logger) *Queue {
	return &Queue{dir: dir, log: log, minPoll: 10 * time.Millisecond, maxPoll: 250 * time.Millisecond}
}

// testHookPending, when set by a test, sees each request once it is queued.
var testHookPending func(PendingRequest)

const (
	idBytes         = 16 // 128 bits from crypto/rand
	maxDecisionSize = 64 << 10
)

func newID() (string, error) {
	b := make([]byte, idBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("approval id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// validID accepts only ids newID makes, so an id can never name another file.
func validID(id string) bool {
	if len(id) != 2*idBytes {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (q *Queue) requestPath(id string) string {
	return filepath.Join(q.dir.Approvals(), id+".request.json")
}

func (q *Queue) decisionPath(id string) string {
	return filepath.Join(q.dir.Approvals(), id+".decision.json")
}

func (q *Queue) audit(r AuditRecord) {
	if err := AppendAudit(q.dir, r); err != nil {
		q.log.Error().Err(err).Str("event", r.Event).Msg("audit log write failed")
	}
}

// Submit queues req (classified as v) for a human and blocks until it is
// decided. It always returns a Decision; anything but a human approval is a
// denial: no answer within timeout, ctx ending (the job was cancelled or the
// harness went away), a cancel from CancelJob, or a decision file that is
// corrupt or malformed. The error reports a request that could not be queued.
func (q *Queue) Submit(ctx context.Context, jobID string, req Request, v Verdict, timeout time.Duration) (Decision, error) {
	if timeout <= 0 {
		return Decision{Kind: KindTimeout, Reason: "no approval timeout configured", Decided: time.Now().UTC()},
			fmt.Errorf("approval timeout must be positive, got %s", timeout)
	}
	id, err := newID()
	if err != nil {
		return Decision{Kind: KindCorrupt, Reason: "could not queue the request", Decided: time.Now().UTC()}, err
	}
	now := time.Now().UTC()
	pr := PendingRequest{Version: statedir.FormatVersion, ID: id, JobID: jobID, Tool: req.Tool, Input: displayInput(req.Input),
		Summary: v.Summary, Reason: v.Reason, Created: now, Expires: now.Add(timeout)}
	if err := statedir.WriteJSON(q.requestPath(id), pr); err != nil {
		return Decision{ID: id, Kind: KindCorrupt, Reason: "could not queue the request for a human", Decided: now}, fmt.Errorf("queue approval: %w", err)
	}
	if testHookPending != nil {
		testHookPending(pr)
	}
	exp := pr.Expires
	q.audit(AuditRecord{Event: EventPending, ID: id, JobID: jobID, Tool: req.Tool, Summary: v.Summary, Input: pr.Input, Verdict: v.Decision, Reason: v.Reason, Expires: &exp})
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
			return q.finish(pr, KindCancel, "the job was cancelled or its harness went away while waiting for approval", EventCancel), nil
		case <-deadline.C:
			return q.finish(pr, KindTimeout, fmt.Sprintf("no answer from the owner within %s", timeout), EventTimeout), nil
		case <-tick.C:
		}
		d, found, err := q.readDecision(id)
		if err != nil {
			return q.corrupt(pr, err), nil
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
	d, claimed, err := q.claim(pr.ID, false, reason, kind, kind)
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
		case found && (kind != KindCancel || !existing.Approved):
			return existing
		}
		d = Decision{ID: pr.ID, Kind: kind, Reason: reason, By: kind, Decided: time.Now().UTC()}
	}
	q.audit(AuditRecord{Event: event, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: Deny, Reason: reason, By: kind})
	q.log.Warn().Str("approval", pr.ID).Str("job", pr.JobID).Str("kind", kind).Msg("denied: " + reason)
	return d
}

func (q *Queue) corrupt(pr PendingRequest, err error) Decision {
	reason := "the decision file was corrupt or malformed (" + err.Error() + ")"
	q.audit(AuditRecord{Event: EventCorrupt, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: Deny, Reason: reason})
	q.log.Error().Str("approval", pr.ID).Err(err).Msg("corrupt decision file: denied")
	return Decision{ID: pr.ID, Kind: KindCorrupt, Reason: reason, Decided: time.Now().UTC()}
}

// claim creates the decision file unless one exists. It reports whether this
// call created it.
func (q *Queue) claim(id string, approved bool, reason, by, kind string) (Decision, bool, error) {
	now := time.Now().UTC()
	df := decisionFile{Version: statedir.FormatVersion, ID: id, Approved: &approved, Reason: reason, By: by, Kind: kind, Decided: now}
	b, err := json.MarshalIndent(df, "", "  ")
	if err != nil {
		return Decision{}, false, err
	}
	f, err := os.CreateTemp(q.dir.Approvals(), "."+id+".*.tmp")
	if err != nil {
		return Decision{}, false, fmt.Errorf("write decision: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Decision{}, false, fmt.Errorf("write decision: %w", werr)
	}
	if err := os.Link(tmp, q.decisionPath(id)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Decision{}, false, nil
		}
		return Decision{}, false, fmt.Errorf("write decision: %w", err)
	}
	return Decision{ID: id, Approved: approved, Reason: reason, By: by, Kind: kind, Decided: now}, true, nil
}

// readDecision reads <id>.decision.json. found is false when there is none;
// an error means it exists but is corrupt or malformed.
func (q *Queue) readDecision(id string) (Decision, bool, error) {
	path := q.decisionPath(id)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Decision{}, false, nil
	}
	if err != nil {
		return Decision{}, true, err
	}
	if !fi.Mode().IsRegular() {
		return Decision{}, true, errors.New("not a regular file")
	}
	if fi.Size() > maxDecisionSize {
		return Decision{}, true, fmt.Errorf("%d bytes is too large", fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Decision{}, true, err
	}
	var df decisionFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&df); err != nil {
		return Decision{}, true, fmt.Errorf("not a decision: %v", err)
	}
	switch {
	case df.Version != statedir.FormatVersion:
		return Decision{}, true, fmt.Errorf("version %d, want %d", df.Version, statedir.FormatVersion)
	case df.ID != id:
		return Decision{}, true, fmt.Errorf("id %q does not match %s", df.ID, id)
	case df.Approved == nil:
		return Decision{}, true, errors.New(`no "approved" field`)
	case df.Decided.IsZero():
		return Decision{}, true, errors.New(`no "decided" time`)
	case df.Kind != KindHuman && df.Kind != KindTimeout && df.Kind != KindCancel:
		return Decision{}, true, fmt.Errorf("unknown kind %q", df.Kind)
	case *df.Approved && df.Kind != KindHuman:
		return Decision{}, true, fmt.Errorf("only a human can approve, not %q", df.Kind)
	}
	return Decision{ID: id, Approved: *df.Approved, Reason: df.Reason, By: df.By, Kind: df.Kind, Decided: df.Decided}, true, nil
}

func (q *Queue) readRequest(id string) (PendingRequest, error) {
	var pr PendingRequest
	if err := statedir.ReadJSON(q.requestPath(id), &pr); err != nil {
		return pr, err
	}
	if pr.ID != id {
		return pr, fmt.Errorf("request file %s holds id %q", id, pr.ID)
	}
	return pr, nil
}

// Decide records a human's answer to request id. who names the human (the
// OS user, say). Unknown ids, expired requests and requests that already
// have a decision are refused with ErrUnknownID, ErrExpired and
// ErrAlreadyDecided.
func (q *Queue) Decide(id string, approve bool, reason, who string) error {
	if !validID(id) {
		return fmt.Errorf("%w %q: `bridgectl pending` lists the open requests", ErrUnknownID, id)
	}
	pr, err := q.readRequest(id)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w %s: `bridgectl pending` lists the open requests", ErrUnknownID, id)
	}
	if err != nil {
		return fmt.Errorf("approval %s: %w", id, err)
	}
	if d, found, err := q.readDecision(id); found {
		if err != nil {
			return fmt.Errorf("%w: approval %s has a corrupt decision file (%v); the job was denied", ErrAlreadyDecided, id, err)
		}
		if d.Kind == KindTimeout {
			return fmt.Errorf("%w: approval %s expired at %s with no answer; the job was denied", ErrExpired, id, pr.Expires.Format(time.RFC3339))
		}
		verb := "denied"
		if d.Approved {
			verb = "approved"
		}
		return fmt.Errorf("%w: approval %s was %s by %s at %s", ErrAlreadyDecided, id, verb, d.By, d.Decided.Format(time.RFC3339))
	}
	if !time.Now().Before(pr.Expires) {
		return fmt.Errorf("%w: approval %s expired at %s; the job was denied", ErrExpired, id, pr.Expires.Format(time.RFC3339))
	}
	if who == "" {
		who = "owner"
	}
	d, claimed, err := q.claim(id, approve, reason, who, KindHuman)
	if err != nil {
		return fmt.Errorf("approval %s: %w", id, err)
	}
	if !claimed {
		return fmt.Errorf("%w: approval %s was decided a moment ago; see `bridgectl audit`", ErrAlreadyDecided, id)
	}
	decision := Deny
	if d.Approved {
		decision = Allow
	}
	q.audit(AuditRecord{Event: EventHuman, ID: id, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: decision, Reason: reason, By: who})
	return nil
}

// Pending lists the requests waiting for a human, oldest first: those with
// no decision that have not expired.
func (q *Queue) Pending() ([]PendingRequest, error) {
	return q.pending(func(PendingRequest) bool { return true }, false)
}

// PendingForJob lists the open requests of one job (for its
// waiting_approval summary).
func (q *Queue) PendingForJob(jobID string) ([]PendingRequest, error) {
	return q.pending(func(pr PendingRequest) bool { return pr.JobID == jobID }, false)
}

func (q *Queue) pending(keep func(PendingRequest) bool, withExpired bool) ([]PendingRequest, error) {
	entries, err := os.ReadDir(q.dir.Approvals())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	now := time.Now()
	var out []PendingRequest
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".request.json")
		if !ok || !validID(id) {
			continue
		}
		if _, found, _ := q.readDecision(id); found {
			continue
		}
		pr, err := q.readRequest(id)
		if err != nil {
			q.log.Error().Err(err).Str("approval", id).Msg("unreadable request file skipped")
			continue
		}
		if !withExpired && !now.Before(pr.Expires) {
			continue
		}
		if keep(pr) {
			out = append(out, pr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// CancelJob denies every undecided request of a job (expired ones too), so
// its approval child stops waiting. It returns how many it denied.
func (q *Queue) CancelJob(jobID string) (int, error) {
	return q.cancelWhere(func(pr PendingRequest) bool { return pr.JobID == jobID }, "the job was cancelled")
}

// CancelAll denies every undecided request with reason. The daemon calls it
// at boot (no approval child of a previous run can still be waiting) so
// `bridgectl pending` never shows a request nobody waits for.
func (q *Queue) CancelAll(reason string) (int, error) {
	return q.cancelWhere(func(PendingRequest) bool { return true }, reason)
}

func (q *Queue) cancelWhere(keep func(PendingRequest) bool, reason string) (int, error) {
	open, err := q.pending(keep, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pr := range open {
		_, claimed, err := q.claim(pr.ID, false, reason, KindCancel, KindCancel)
		if err != nil {
			return n, fmt.Errorf("cancel approval %s: %w", pr.ID, err)
		}
		if claimed {
			n++
			q.audit(AuditRecord{Event: EventCancel, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: Deny, Reason: reason, By: KindCancel})
		}
	}
	return n, nil
}

// ApprovalOff reports whether the approval-off flag is in the state dir.
func ApprovalOff(dir statedir.Dir) bool {
	_, err := os.Lstat(dir.ApprovalOffFlag())
	return err == nil
}

// SetApprovalOff writes the approval-off flag (what `bridgectl` does for a
// trusted run); the daemon removes it at its next boot.
func SetApprovalOff(dir statedir.Dir, who string) error {
	return statedir.WriteJSON(dir.ApprovalOffFlag(), map[string]any{
		"version": statedir.FormatVersion, "by": who, "set": time.Now().UTC(),
	})
}

// ClearApprovalOff removes the approval-off flag; the daemon calls it at boot.
func ClearApprovalOff(dir statedir.Dir) error {
	err := os.Remove(dir.ApprovalOffFlag())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear approval-off flag: %w", err)
	}
	return nil
}

// Prune removes the request and decision files of requests created before
// cutoff that are decided or expired (the audit log keeps their history). It
// returns how many requests it removed.
func (q *Queue) Prune(cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(q.dir.Approvals())
	if err != nil {
		return 0, fmt.Errorf("list approvals: %w", err)
	}
	now := time.Now()
	n := 0
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".request.json")
		if !ok || !validID(id) {
			continue
		}
		pr, err := q.readRequest(id)
		if err != nil || !pr.Created.Before(cutoff) {
			continue
		}
		if _, decided, _ := q.readDecision(id); !decided && now.Before(pr.Expires) {
			continue
		}
		for _, p := range []string{q.decisionPath(id), q.requestPath(id)} {
			if err := os.RemoveAll(p); err != nil {
				return n, fmt.Errorf("prune approval %s: %w", id, err)
			}
		}
		n++
	}
	return n, nil
}

// maxShownString bounds each string of a tool input kept in a request file
// (a Write's content can be megabytes); the harness still gets the full
// input back when the request is approved.
const maxShownString = 4096

// displayInput copies input for the request file, clipping long strings and
// marking that it did so with "_clipped": true.
func displayInput(input map[string]any) map[string]any {
	clipped := false
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			if len(t) > maxShownString {
				clipped = true
				cut := maxShownString
				for cut > 0 && !utf8Start(t[cut]) {
					cut--
				}
				return t[:cut] + fmt.Sprintf("… [%d more bytes]", len(t)-cut)
			}
			return t
		case map[string]any:
			m := make(map[string]any, len(t))
			for k, x := range t {
				m[k] = walk(x)
			}
			return m
		case []any:
			l := make([]any, len(t))
			for i, x := range t {
				l[i] = walk(x)
			}
			return l
		}
		return v
	}
	out, _ := walk(input).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if clipped {
		out["_clipped"] = true
	}
	return out
}

package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// maxDecisionSize bounds a decision file read back.
const maxDecisionSize = 64 << 10

// Decide records a human's answer to request id. who names the human (the
// OS user, say). Unknown ids, expired requests and requests that already
// have a decision are refused with ErrUnknownID, ErrExpired and
// ErrAlreadyDecided.
func (q *Queue) Decide(id string, approve bool, reason, who string) error {
	return q.DecideVia(id, approve, reason, who, ChannelTerminal)
}

// Request is the pending request id as it was queued (decided or not).
func (q *Queue) Request(id string) (PendingRequest, error) {
	if !ids.Valid(id) {
		return PendingRequest{}, fmt.Errorf("%w %q", ErrUnknownID, id)
	}
	pr, err := q.readRequest(id)
	if errors.Is(err, fs.ErrNotExist) {
		return pr, fmt.Errorf("%w %s", ErrUnknownID, id)
	}
	return pr, err
}

// DecideVia is Decide by a person who answered through channel
// (ChannelTerminal: bridgectl; ChannelHost: the MCP host's user, asked by
// an elicitation), which the audit record and the decision keep.
func (q *Queue) DecideVia(id string, approve bool, reason, who, channel string) error {
	if !ids.Valid(id) {
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
		if d.Kind == KindShutdown {
			return fmt.Errorf("%w: approval %s was left unanswered when the bridge stopped at %s; the job did not run the call", ErrAlreadyDecided, id, d.Decided.Format(time.RFC3339))
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
	// The record first: a decision takes effect only once it is on record,
	// so an approval never lets a call run unrecorded.
	decision := rules.Deny
	if approve {
		decision = rules.Allow
	}
	if err := q.Audit(AuditRecord{Event: EventHuman, ID: id, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: decision, Reason: reason, By: who, Channel: channel}); err != nil {
		return fmt.Errorf("approval %s: nothing was decided: its audit record could not be written (%v); free space in the state dir and answer again (the request times out as denied meanwhile)", id, err)
	}
	_, claimed, err := q.claim(id, approve, reason, who, KindHuman, channel)
	if err != nil || !claimed {
		why := "it was decided a moment before"
		if err != nil {
			why = "its decision file could not be written: " + writeCause(err)
		}
		q.Audit(AuditRecord{Event: EventHuman, ID: id, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, By: who, Channel: channel, Reason: "the decision recorded above did not take effect: " + why})
	}
	if err != nil {
		return fmt.Errorf("approval %s: %w", id, err)
	}
	if !claimed {
		return fmt.Errorf("%w: approval %s was decided a moment ago; see `bridgectl audit`", ErrAlreadyDecided, id)
	}
	return nil
}

// claim creates the decision file unless one exists. It reports whether this
// call created it.
func (q *Queue) claim(id string, approved bool, reason, by, kind, channel string) (Decision, bool, error) {
	now := time.Now().UTC()
	df := decisionFile{Version: statedir.FormatVersion, ID: id, Approved: &approved, Reason: reason, By: by, Kind: kind, Channel: channel, Decided: now}
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
	case df.Kind != KindHuman && df.Kind != KindTimeout && df.Kind != KindCancel && df.Kind != KindShutdown:
		return Decision{}, true, fmt.Errorf("unknown kind %q", df.Kind)
	case *df.Approved && df.Kind != KindHuman:
		return Decision{}, true, fmt.Errorf("only a human can approve, not %q", df.Kind)
	case df.Channel != "" && df.Kind != KindHuman || df.Channel != "" && df.Channel != ChannelTerminal && df.Channel != ChannelHost:
		return Decision{}, true, fmt.Errorf("channel %q for a %s decision", df.Channel, df.Kind)
	}
	return Decision{ID: id, Approved: *df.Approved, Reason: df.Reason, By: df.By, Kind: df.Kind, Channel: df.Channel, Decided: df.Decided}, true, nil
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

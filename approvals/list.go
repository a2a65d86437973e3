package approvals

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
)

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
		if !ok || !ids.Valid(id) {
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
		_, claimed, err := q.claim(pr.ID, false, reason, KindCancel, KindCancel, "")
		if err != nil {
			return n, fmt.Errorf("cancel approval %s: %w", pr.ID, err)
		}
		if claimed {
			n++
			q.Audit(AuditRecord{Event: EventCancel, ID: pr.ID, JobID: pr.JobID, Tool: pr.Tool, Summary: pr.Summary, Decision: rules.Deny, Reason: reason, By: KindCancel})
		}
	}
	return n, nil
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
		if !ok || !ids.Valid(id) {
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

package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ErrDamagedJob: the job's snapshot exists but cannot be read as a job (cut
// short, say, or in a status this build does not know); what is still known
// is in the error's text.
var ErrDamagedJob = errors.New("the job's record is damaged")

// DamagedError: jobs/<id>.json exists but does not decode. Known holds the
// fields still whole in it (the rest are zero), Fields their names.
type DamagedError struct {
	Path   string
	ID     string
	Err    error
	Known  Snapshot
	Fields []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("job %s: its snapshot %s is damaged (%v): %s", e.ID, e.Path, e.Err, e.KnownText())
}

func (e *DamagedError) Unwrap() error { return ErrDamagedJob }

// KnownText says what the damaged snapshot still tells.
func (e *DamagedError) KnownText() string {
	k, has := e.Known, map[string]bool{}
	for _, f := range e.Fields {
		has[f] = true
	}
	var parts []string
	if has["status"] {
		parts = append(parts, "status "+string(k.Status))
	}
	if has["steps"] {
		parts = append(parts, fmt.Sprintf("%d steps", k.Steps))
	}
	if has["created_at"] {
		parts = append(parts, "created "+k.CreatedAt.UTC().Format(time.RFC3339))
	}
	if has["ended_at"] && k.EndedAt != nil {
		parts = append(parts, "ended "+k.EndedAt.UTC().Format(time.RFC3339))
	}
	if has["error"] && k.Error != "" {
		parts = append(parts, "error: "+harness.Clip(k.Error, 200))
	}
	if has["task"] {
		parts = append(parts, "task: "+harness.Clip(k.Task, 120))
	}
	if len(parts) == 0 {
		return "nothing in it is still readable"
	}
	what := "still known: " + strings.Join(parts, "; ")
	if k.Status == StatusRunning || k.Status == StatusQueued || k.Status == StatusWaitingApproval || !has["status"] {
		what += " (how it ended is not known)"
	}
	return what
}

// damaged reads what is whole in a snapshot that does not decode.
func damaged(path, id string, b []byte, err error) *DamagedError {
	e := &DamagedError{Path: path, ID: id, Err: err}
	known := statedir.Salvage(b)
	for name, raw := range known {
		// One field at a time: a field of the wrong type loses only itself.
		one, _ := json.Marshal(map[string]json.RawMessage{name: raw})
		if json.Unmarshal(one, &e.Known) == nil {
			e.Fields = append(e.Fields, name)
		}
	}
	return e
}

// SetAsideDir holds snapshots the daemon could not take as jobs and moved
// out of jobs/ unchanged: jobs/set-aside/<id>.json.
func SetAsideDir(dir statedir.Dir) string { return filepath.Join(dir.Jobs(), "set-aside") }

// UnknownStatusError: a snapshot in a status this build does not know (a
// newer or older release wrote it). The daemon sets it aside unchanged, so
// its result and nonce are kept, and polls of the job say where it went.
type UnknownStatusError struct {
	Path   string
	ID     string
	Status Status
}

func (e *UnknownStatusError) Error() string {
	return fmt.Sprintf("job %s: its snapshot %s has status %q, which this build does not know: read it with the bridge release that wrote it", e.ID, e.Path, e.Status)
}

func (e *UnknownStatusError) Unwrap() error { return ErrDamagedJob }

// known reports whether s is one of this build's statuses.
func (s Status) known() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaitingApproval, StatusDone, StatusDoneUnverified, StatusError, StatusCancelled, StatusInterrupted:
		return true
	}
	return false
}

// keepDamaged (reload, before the registry is shared) remembers a snapshot
// that could not be taken as a job, so a poll of its id says the record is
// damaged rather than that the job never existed. A job it says was
// unfinished may have left processes: no daemon runs it now (this one holds
// the lock), so they are killed.
func (r *Registry) keepDamaged(id, why string, unfinished bool) {
	r.damaged[id] = why
	if unfinished {
		if n := harness.KillJobProcesses(id); n > 0 {
			r.log.Warn().Str("job", id).Int("processes", n).Msg("killed leftover harness processes of a job whose snapshot is damaged")
		}
	}
}

// setAside moves a snapshot in an unknown status out of jobs/, unchanged.
func (r *Registry) setAside(e *UnknownStatusError) {
	to := filepath.Join(SetAsideDir(r.opts.Dir), e.ID+".json")
	err := os.MkdirAll(SetAsideDir(r.opts.Dir), 0o700)
	if err == nil {
		err = os.Rename(e.Path, to)
	}
	if err != nil {
		r.log.Error().Err(err).Str("job", e.ID).Str("status", string(e.Status)).Msg("job snapshot in an unknown status left in place (setting it aside failed)")
		r.keepDamaged(e.ID, e.Error(), true)
		return
	}
	r.log.Warn().Str("job", e.ID).Str("status", string(e.Status)).Str("file", to).
		Msg("job snapshot in a status this build does not know: set aside unchanged (its result and nonce are kept there); its harness dir is kept")
	r.keepDamaged(e.ID, fmt.Sprintf("job %s: its snapshot has status %q, which this build does not know; it was set aside unchanged as %s (its result and nonce, if any, are there): read it with the bridge release that wrote it", e.ID, e.Status, to), true)
}

// unknownLocked is the error for an id the registry holds no job for: a
// damaged record if its snapshot could not be read, else unknown.
func (r *Registry) unknownLocked(id string) error {
	if why, ok := r.damaged[id]; ok {
		return fmt.Errorf("%w: %s. The bridge cannot tell how this job ended; do not assume it succeeded", ErrDamagedJob, why)
	}
	return fmt.Errorf("%w %q: it never existed here or its results expired; start a new job with deepseek_agent_start", ErrUnknownJob, id)
}

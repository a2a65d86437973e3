package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// told says whom commitLocked tells once a snapshot is on disk.
type told int

const (
	tellNobody  told = iota // nobody waits yet, or they were told already
	tellWaiters             // wake j's waiters: its state changed
	tellSettled             // j is final: release its waiters for good
)

// commitLocked is the one way a change of j reaches disk: it captures j's
// snapshot, writes it with r.mu unlocked (a slow disk stalls only this job),
// and with r.mu locked again tells whom tell says. Waiters are told only
// after the write, so whoever hears of a change (and then reads
// jobs/<id>.json, as bridgectl does) finds it there. A failed write (a full
// or read-only disk) is logged and retried until it lands (retryLocked),
// never returned: the job goes on, and its state in memory is the truth
// meanwhile. It returns the captured snapshot.
func (r *Registry) commitLocked(j *job, tell told) Snapshot {
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	err := r.write(j, snap, seq)
	if err != nil {
		r.log.Error().Err(err).Str("job", j.id).Str("status", string(snap.Status)).Msg("snapshot write failed: retrying until it lands")
	}
	r.mu.Lock()
	if err != nil {
		r.retryLocked(j)
	}
	switch tell {
	case tellWaiters:
		r.notifyLocked(j)
	case tellSettled:
		r.settleLocked(j)
	}
	return snap
}

// Waits between attempts to write a snapshot whose write failed.
const (
	retryFirst = 50 * time.Millisecond
	retryEvery = 2 * time.Second
)

// pendingWrites counts the jobs whose snapshot is being retried, so Close can
// wait for them; guarded by Registry.mu.
type pendingWrites struct {
	n       int
	changed chan struct{} // closed and replaced when n drops
	stop    chan struct{} // closed by Close when it stops waiting
}

// retryLocked starts retrying j's snapshot, unless that runs already.
func (r *Registry) retryLocked(j *job) {
	if j.retrying || j.removed {
		return
	}
	if r.writes.changed == nil {
		r.writes.changed, r.writes.stop = make(chan struct{}), make(chan struct{})
	}
	j.retrying = true
	r.writes.n++
	go r.retryWrites(j, r.writes.stop) // owner: the registry (joined by Close)
}

// retryWrites writes j's latest snapshot, with growing waits, until it
// lands, the job is swept, or Close gives up (then the state it could not
// write is logged: it is lost with this daemon).
func (r *Registry) retryWrites(j *job, stop <-chan struct{}) {
	t := time.NewTimer(retryFirst)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-stop:
			r.mu.Lock()
			s := j.snap
			r.mu.Unlock()
			// Logged before Close is told: once it returns, every lost state
			// is in the log.
			r.log.Error().Str("job", j.id).Str("status", string(s.Status)).Int("steps", s.Steps).Str("reason", s.Error).
				Msg("snapshot never written before shutdown: jobs/" + j.id + ".json keeps an older state")
			r.mu.Lock()
			r.doneRetryingLocked(j)
			r.mu.Unlock()
			return
		case <-t.C:
		}
		r.mu.Lock()
		if j.removed {
			r.doneRetryingLocked(j)
			r.mu.Unlock()
			return
		}
		snap, seq := r.captureLocked(j)
		r.mu.Unlock()
		err := r.write(j, snap, seq)
		if err == nil {
			r.mu.Lock()
			r.doneRetryingLocked(j)
			r.mu.Unlock()
			r.log.Info().Str("job", j.id).Str("status", string(snap.Status)).Int("attempts", attempt).Msg("snapshot written after its write had failed")
			return
		}
		if attempt&(attempt-1) == 0 { // 1, 2, 4, 8, ...: the log says it goes on, without flooding
			r.log.Error().Err(err).Str("job", j.id).Str("status", string(snap.Status)).Int("attempts", attempt).Msg("snapshot write still failing: retrying")
		}
		t.Reset(backoff.Exponential(retryFirst, retryEvery, attempt+1))
	}
}

func (r *Registry) doneRetryingLocked(j *job) {
	j.retrying = false
	r.writes.n--
	close(r.writes.changed)
	r.writes.changed = make(chan struct{})
}

// waitWrites waits until no snapshot is being retried, or ctx ends: then
// the retries stop, log what they could not write, and are joined. It
// reports how many gave up.
func (r *Registry) waitWrites(ctx context.Context) int {
	gaveUp := 0
	for {
		r.mu.Lock()
		n, changed, stop := r.writes.n, r.writes.changed, r.writes.stop
		r.mu.Unlock()
		if n == 0 {
			return gaveUp
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if gaveUp == 0 {
				gaveUp = n
				close(stop)
			}
			<-changed
		}
	}
}

// captureLocked copies j's snapshot for writing, with its sequence number.
func (r *Registry) captureLocked(j *job) (Snapshot, uint64) {
	j.seq++
	return r.snapshotLocked(j), j.seq
}

// write stores snap unless a newer one of the same job is already on disk
// (two writers of one job may finish out of order) or the job was swept.
func (r *Registry) write(j *job, snap Snapshot, seq uint64) error {
	j.persistMu.Lock()
	defer j.persistMu.Unlock()
	if seq <= j.written {
		return nil
	}
	r.mu.Lock()
	removed := j.removed
	r.mu.Unlock()
	if removed {
		return nil
	}
	snap.QueuePosition = 0 // a live value, not state
	if err := statedir.WriteJSON(r.opts.Dir.JobFile(j.id), snap); err != nil {
		return err
	}
	j.written = seq
	return nil
}

// reload turns the snapshots on disk into jobs. It runs in New, before the
// registry is shared, so it writes directly and a failed write fails New.
func (r *Registry) reload() error {
	snaps, errs := LoadAll(r.opts.Dir)
	for _, err := range errs {
		var fe *ForeignVersionError
		var ue *UnknownStatusError
		var de *DamagedError
		switch {
		case errors.As(err, &fe):
			if s, ok := r.adoptForeign(fe); ok {
				snaps = append(snaps, s)
			}
		case errors.As(err, &ue):
			r.setAside(ue)
		case errors.As(err, &de):
			// Kept as it is: a restart never rewrites what it cannot read,
			// and never turns a recorded end into interrupted.
			r.log.Warn().Err(err).Msg("job snapshot damaged: kept as it is, with its harness dir; polls of the job say so")
			r.keepDamaged(de.ID, de.Error(), !de.Known.Status.Final())
		default:
			r.log.Warn().Err(err).Msg("skipping unreadable job snapshot; its harness dir is kept")
		}
	}
	now := time.Now()
	for _, s := range snaps {
		j := r.newJob(s)
		if !s.Status.Final() {
			// The daemon that ran it is gone; so must be its harness tree.
			if n := harness.KillJobProcesses(s.ID); n > 0 {
				r.log.Warn().Str("job", s.ID).Int("processes", n).Msg("killed leftover harness processes of an interrupted job")
			}
			settleCommands(j.snap.Commands, s.Status == StatusWaitingApproval)
			if s.Status != StatusQueued {
				res := r.opts.Guard.Audit(context.Background(), s.ID, s.Workspace)
				j.snap.Quarantined, j.snap.AuditNote = res.Quarantined, res.Note
				j.setChanges(r.opts.Guard.Changes(context.Background(), s.ID, s.Workspace))
			}
			j.snap.Status, j.snap.StopReason = StatusInterrupted, StopInterruptedByRestart
			j.snap.UnresolvedFailures = UnresolvedFailures(j.snap.Commands)
			j.snap.Error = fmt.Sprintf("the bridge stopped while the job was %s; it did not finish", s.Status)
			j.snap.Nonce, j.snap.Result, j.snap.Approval = "", "", nil
			j.snap.Partial = partialFromSnapshot(&j.snap)
			j.snap.EndedAt = &now
			exp := now.Add(r.opts.ResultTTL)
			j.snap.ExpiresAt = &exp
			j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "interrupted: the bridge restarted"})
			close(j.done)
			r.jobs[s.ID] = j
			j.seq++
			if err := r.write(j, j.snap.clone(), j.seq); err != nil {
				return err
			}
			continue
		}
		if s.ExpiresAt != nil && now.After(*s.ExpiresAt) {
			r.removeFiles(s.ID)
			continue
		}
		close(j.done)
		r.jobs[s.ID] = j
	}
	return nil
}

// adoptForeign reads the little every snapshot version shares (id, status,
// task, workspace, created_at) from a snapshot of a foreign format version.
// A job it says was unfinished is handed to reload, which marks it
// interrupted, kills its leftover processes and rewrites the file in this
// build's format (no daemon runs it: the state dir's lock is held by this
// one). A finished one, or one that does not parse that far, is left as it is
// and logged; its harness dir is kept.
func (r *Registry) adoptForeign(fe *ForeignVersionError) (Snapshot, bool) {
	var old struct {
		ID        string    `json:"id"`
		Status    Status    `json:"status"`
		Task      string    `json:"task"`
		Workspace string    `json:"workspace"`
		CreatedAt time.Time `json:"created_at"`
	}
	log := r.log.Warn().Str("file", fe.Path).Int("version", fe.Version)
	if err := statedir.ReadJSON(fe.Path, &old); err != nil || old.ID != fe.ID || old.Status == "" {
		log.Msg("job snapshot of a foreign format version left as it is (it does not parse as a job); its harness dir is kept")
		return Snapshot{}, false
	}
	if old.Status.Final() {
		log.Str("status", string(old.Status)).Msg("finished job snapshot of a foreign format version left as it is; its harness dir is kept")
		return Snapshot{}, false
	}
	log.Str("status", string(old.Status)).Msg("unfinished job snapshot of a foreign format version: marking it interrupted in this build's format")
	return Snapshot{
		Version: SnapshotVersion, ID: old.ID, Status: old.Status, Task: old.Task, Workspace: old.Workspace,
		CreatedAt: old.CreatedAt, FilesWritten: []string{}, Commands: []Command{},
	}, true
}

// sweep removes finished jobs whose TTL has passed, from memory and disk.
func (r *Registry) sweep() {
	defer r.wg.Done()
	every := min(r.opts.ResultTTL/4, time.Minute)
	every = max(every, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			r.sweepOnce(now)
		}
	}
}

func (r *Registry) sweepOnce(now time.Time) {
	r.mu.Lock()
	var gone []string
	for id, j := range r.jobs {
		if j.snap.Status.Final() && j.snap.ExpiresAt != nil && !now.Before(*j.snap.ExpiresAt) {
			j.removed = true
			delete(r.jobs, id)
			gone = append(gone, id)
		}
	}
	r.mu.Unlock()
	for _, id := range gone {
		r.removeFiles(id)
		r.log.Debug().Str("job", id).Msg("job expired")
	}
}

// removeOrphanHarnessDirs deletes per-job harness dirs and changes dirs no
// snapshot refers to (their job expired while no daemon was running).
func (r *Registry) removeOrphanHarnessDirs() {
	r.removeOrphans(r.opts.Dir.HarnessRoot(), r.opts.Dir.HarnessDir)
	r.removeOrphans(r.opts.Dir.ChangesRoot(), r.opts.Dir.ChangesDir)
	r.removeOrphans(r.opts.Dir.LedgerRoot(), r.opts.Dir.LedgerDir)
}

func (r *Registry) removeOrphans(root string, dirOf func(id string) string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		id := e.Name()
		if _, ok := r.jobs[id]; ok || !ids.Valid(id) {
			continue
		}
		if _, ok := r.damaged[id]; ok {
			continue // its snapshot is damaged or set aside: kept with it
		}
		if _, err := os.Lstat(r.opts.Dir.JobFile(id)); err == nil {
			continue // a snapshot this build could not read: not an orphan
		}
		_ = os.RemoveAll(dirOf(id))
	}
}

func (r *Registry) removeFiles(id string) {
	if err := os.RemoveAll(r.opts.Dir.ChangesDir(id)); err != nil {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired changes dir")
	}
	if err := os.Remove(r.opts.Dir.JobFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired snapshot")
	}
	if err := os.RemoveAll(r.opts.Dir.HarnessDir(id)); err != nil {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired harness dir")
	}
	if err := os.RemoveAll(r.opts.Dir.LedgerDir(id)); err != nil {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired ledger")
	}
}

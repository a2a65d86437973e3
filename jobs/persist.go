package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

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
// jobs/<id>.json, as bridgectl does) finds it there. A failed write is
// logged, never returned: the job goes on, in memory. It returns the
// captured snapshot.
func (r *Registry) commitLocked(j *job, tell told) Snapshot {
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	if err := r.write(j, snap, seq); err != nil {
		r.log.Error().Err(err).Str("job", j.id).Str("status", string(snap.Status)).Msg("snapshot write failed")
	}
	r.mu.Lock()
	switch tell {
	case tellWaiters:
		r.notifyLocked(j)
	case tellSettled:
		r.settleLocked(j)
	}
	return snap
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
		if errors.As(err, &fe) {
			if s, ok := r.adoptForeign(fe); ok {
				snaps = append(snaps, s)
			}
			continue
		}
		r.log.Warn().Err(err).Msg("skipping unreadable job snapshot; its harness dir is kept")
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
			}
			j.snap.Status = StatusInterrupted
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

// removeOrphanHarnessDirs deletes per-job harness dirs no snapshot refers to
// (their job expired while no daemon was running).
func (r *Registry) removeOrphanHarnessDirs() {
	entries, err := os.ReadDir(r.opts.Dir.HarnessRoot())
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
		if _, err := os.Lstat(r.opts.Dir.JobFile(id)); err == nil {
			continue // a snapshot this build could not read: not an orphan
		}
		_ = os.RemoveAll(r.opts.Dir.HarnessDir(id))
	}
}

func (r *Registry) removeFiles(id string) {
	if err := os.Remove(r.opts.Dir.JobFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired snapshot")
	}
	if err := os.RemoveAll(r.opts.Dir.HarnessDir(id)); err != nil {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired harness dir")
	}
}

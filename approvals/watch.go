package approvals

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// watchInterval is how often Watch looks for requests waiting for a human
// (the queue lives in files the approval children write).
const watchInterval = 250 * time.Millisecond

// keepDecided is how long decided and expired requests stay in the queue dir
// (the audit log keeps their history); Watch prunes them when it starts and
// then once per keepDecided.
const keepDecided = time.Hour

// LiveJob is a job that can still wait for an answer: one that runs or
// already waits for a human.
type LiveJob struct {
	ID      string
	Waiting bool // it shows a pending request now
}

// Sink is what Watch shows pending requests on: the daemon's job registry.
type Sink interface {
	// LiveJobs lists the jobs that run or wait for a human.
	LiveJobs() []LiveJob
	// SetWaiting shows req as the request the job waits on; nil puts the
	// job back to running.
	SetWaiting(jobID string, req *PendingRequest)
}

// Watch shows each live job's pending request on sink (its oldest one) and
// puts the job back to running once it is decided; it ends the pending
// requests of jobs that are over (cancelled, failed, unknown) in deny, and
// prunes decided requests. It returns when ctx ends.
func Watch(ctx context.Context, q *Queue, sink Sink) {
	shown := map[string]string{} // job id → request id shown
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	lastPrune := time.Now()
	prune(q, lastPrune)
	for {
		syncPending(q, sink, shown)
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(lastPrune) >= keepDecided {
				prune(q, now)
				lastPrune = now
			}
		}
	}
}

// syncPending is one pass of Watch.
func syncPending(q *Queue, sink Sink, shown map[string]string) {
	pending, err := q.Pending()
	if err != nil {
		q.log.Warn().Err(err).Msg("read the approval queue")
		return
	}
	first := map[string]PendingRequest{} // job id → its oldest pending request
	for _, p := range pending {
		if cur, ok := first[p.JobID]; !ok || p.Created.Before(cur.Created) {
			first[p.JobID] = p
		}
	}
	live := map[string]bool{}
	for _, j := range sink.LiveJobs() {
		live[j.ID] = true
		p, waiting := first[j.ID]
		switch {
		case waiting && (!j.Waiting || shown[j.ID] != p.ID):
			sink.SetWaiting(j.ID, &p)
			shown[j.ID] = p.ID
		case !waiting && j.Waiting:
			sink.SetWaiting(j.ID, nil)
			delete(shown, j.ID)
		}
	}
	for id := range shown {
		if !live[id] {
			delete(shown, id)
		}
	}
	for jobID := range first {
		if live[jobID] {
			continue
		}
		// The job is over (or unknown): nobody is waiting for this answer,
		// and an approval must not outlive it.
		n, err := q.CancelJob(jobID)
		if err != nil {
			q.log.Warn().Err(err).Str("job", jobID).Msg("deny the pending requests of an ended job")
		} else if n > 0 {
			q.log.Info().Str("job", jobID).Int("requests", n).Msg("denied the pending requests of an ended job")
		}
	}
}

// prune removes the files of requests decided or expired more than
// keepDecided before now.
func prune(q *Queue, now time.Time) {
	n, err := q.Prune(now.Add(-keepDecided))
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		q.log.Warn().Err(err).Msg("prune the approval queue")
	case n > 0:
		q.log.Debug().Int("requests", n).Msg("pruned decided approval requests")
	}
}

// Cancelling a job, by its caller or its owner, and a stop the model proxy asks for.

package jobs

import (
	"context"
)

// Cancel ends a job as cancelled by its caller (CancelBy).
func (r *Registry) Cancel(ctx context.Context, id string) (Snapshot, error) {
	return r.CancelBy(ctx, id, StopCancelledByCaller)
}

// cancelText says who cancelled a job.
func cancelText(by StopReason) string {
	if by == StopCancelledByOwner {
		return "cancelled by the owner (bridgectl job kill)"
	}
	return "cancelled by the caller"
}

// CancelBy ends a job as cancelled, by the caller (StopCancelledByCaller)
// or the owner (StopCancelledByOwner), and returns its snapshot once it is
// final (or after ctx ends). A finished job is returned unchanged.
func (r *Registry) CancelBy(ctx context.Context, id string, by StopReason) (Snapshot, error) {
	if by != StopCancelledByOwner {
		by = StopCancelledByCaller
	}
	r.mu.Lock()
	j, ok := r.jobs[id]
	if !ok {
		err := r.unknownLocked(id)
		r.mu.Unlock()
		return Snapshot{}, err
	}
	switch {
	case j.snap.Status.Final():
		s := r.snapshotLocked(j)
		r.mu.Unlock()
		return s, nil
	case j.snap.Status == StatusQueued:
		r.slots.remove(j)
		r.endLocked(j, outcome{stop: Stop{Reason: by, Text: cancelText(by) + " before it started"}})
		r.notifyQueueLocked()
		r.commitLocked(j, tellSettled)
		r.mu.Unlock()
		return r.Get(id)
	default:
		r.stopLocked(j, Stop{Reason: by, Text: cancelText(by)})
		r.mu.Unlock()
	}
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	return r.Get(id)
}

// Abort ends a running job for st (the model proxy calls it on a spent
// budget or a rejected key: FaultStop). The partial work is attached; no nonce.
func (r *Registry) Abort(id string, st Stop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.jobs[id]; ok {
		r.stopLocked(j, st)
	}
}

package jobs

import (
	"slices"
	"time"
)

// slots are the registry's running slots and the FIFO queue of jobs waiting
// for one. Guarded by Registry.mu.
type slots struct {
	max      int // BRIDGE_MAX_CONCURRENT
	maxQueue int // BRIDGE_MAX_QUEUE
	running  int
	queue    []*job
}

// full reports whether a new job can neither run nor wait.
func (s *slots) full() bool {
	return s.running >= s.max && len(s.queue) >= s.maxQueue
}

// free reports whether a job can start now.
func (s *slots) free() bool { return s.running < s.max }

func (s *slots) take(j *job) {
	s.running++
	j.slot = true
}

// release gives back j's slot, if it holds one.
func (s *slots) release(j *job) {
	if j.slot {
		j.slot = false
		s.running--
	}
}

func (s *slots) enqueue(j *job) { s.queue = append(s.queue, j) }

// remove takes j out of the queue.
func (s *slots) remove(j *job) {
	s.queue = slices.DeleteFunc(s.queue, func(q *job) bool { return q == j })
}

// position is j's place in the queue, 1 for the next to start; 0 when it is
// not queued.
func (s *slots) position(j *job) int {
	for i, q := range s.queue {
		if q == j {
			return i + 1
		}
	}
	return 0
}

// next pops the head of the queue if a slot is free.
func (s *slots) next() (*job, bool) {
	if !s.free() || len(s.queue) == 0 {
		return nil, false
	}
	j := s.queue[0]
	s.queue = s.queue[1:]
	return j, true
}

// drain empties the queue and returns what it held, in order.
func (s *slots) drain() []*job {
	q := s.queue
	s.queue = nil
	return q
}

// launchLocked moves j to running and accounts for its runner; the caller
// starts the runner (go r.runJob(j)) once the running snapshot is on disk.
func (r *Registry) launchLocked(j *job) {
	now := time.Now()
	r.slots.take(j)
	j.snap.Status = StatusRunning
	j.snap.StartedAt = &now
	j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "running"})
	r.wg.Add(1)
}

// startQueuedLocked starts queued jobs while slots are free and returns them;
// the caller writes each one's snapshot and then notifies its waiters.
func (r *Registry) startQueuedLocked() []*job {
	var started []*job
	for !r.closed {
		j, ok := r.slots.next()
		if !ok {
			break
		}
		r.launchLocked(j)
		started = append(started, j)
	}
	r.notifyQueueLocked()
	return started
}

// notifyQueueLocked wakes the waiters of every queued job: their positions moved.
func (r *Registry) notifyQueueLocked() {
	for _, q := range r.slots.queue {
		r.notifyLocked(q)
	}
}

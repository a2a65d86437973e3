package tools

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// registryLikeJobs waits as jobs.Registry.Wait does: it calls onChange with
// the job's state when it begins and at every change, and returns when the
// job is final, when d has passed or when ctx ends — not when the job starts
// waiting for a person. waits says each Wait has begun.
type registryLikeJobs struct {
	mu      sync.Mutex
	snap    jobs.Snapshot
	changed chan struct{} // closed and replaced at each change
	waits   chan struct{}
}

func (r *registryLikeJobs) Start(context.Context, jobs.StartRequest) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, nil
}

func (r *registryLikeJobs) CancelBy(context.Context, string, jobs.StopReason) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, nil
}

func (r *registryLikeJobs) Get(string) (jobs.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snap, nil
}

func (r *registryLikeJobs) set(f func(*jobs.Snapshot)) {
	r.mu.Lock()
	f(&r.snap)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *registryLikeJobs) Wait(ctx context.Context, id string, d time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	r.waits <- struct{}{}
	for {
		r.mu.Lock()
		s, ch := r.snap, r.changed
		r.mu.Unlock()
		if s.Status.Final() {
			return s, nil
		}
		if onChange != nil {
			onChange(s)
		}
		select {
		case <-ch:
		case <-t.C:
			return r.Get(id)
		case <-ctx.Done():
			return r.Get(id)
		}
	}
}

// TestAttackATaskResultAsksAJobsNextRequestLate: a host's tasks/result
// (Tasks.Ask) looks at the job, then waits. The registry's Wait returns only
// at the job's end or after taskWaitStep (a minute): a request the job made
// meanwhile — its first, when the host read the result before the task was
// input_required, or its second after the host answered the first — reached
// the host only a minute later, while tasks/get said input_required all
// along. Ask now ends its wait as a request it has not asked about appears.
func TestAttackATaskResultAsksAJobsNextRequestLate(t *testing.T) {
	j := &registryLikeJobs{snap: jobs.Snapshot{ID: "job-a", Status: jobs.StatusRunning}, changed: make(chan struct{}), waits: make(chan struct{}, 8)}
	host := &fakeHost{pr: approvals.PendingRequest{ID: pendingID, JobID: "job-a", Tool: "Bash", Summary: "make deploy", Expires: time.Now().Add(5 * time.Minute)}}
	tasks := NewTasks(j, host)
	tasks.Begin("task-1")
	tasks.Bind("task-1", "job-a")
	asked := make(chan struct{}, 1)
	elicit := func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- struct{}{}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tasks.Ask(ctx, "task-1", elicit) }() // joined below
	<-j.waits                                                           // Ask has looked: the job runs, and it waits
	j.set(func(s *jobs.Snapshot) {
		s.Status, s.Approval = jobs.StatusWaitingApproval, &jobs.ApprovalInfo{ID: pendingID, Summary: "make deploy"}
	})
	select {
	case <-asked:
	case <-time.After(10 * time.Second): // a guard against a hang: Ask waits up to taskWaitStep
		t.Errorf("the job waits for a person, but its host's tasks/result has not asked after 10 s (it looks again after %s)", taskWaitStep)
	}
	j.set(func(s *jobs.Snapshot) { s.Status = jobs.StatusDone })
	<-done // the job's end ends Ask
	cancel()
}

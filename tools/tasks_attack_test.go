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

// registryLikeJobs waits as jobs.Registry.Wait does: without onChange it
// returns when the job is final, when d has passed or when ctx ends — not
// when the job starts waiting for a person.
type registryLikeJobs struct {
	mu    sync.Mutex
	snap  jobs.Snapshot
	final chan struct{}
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

func (r *registryLikeJobs) Wait(ctx context.Context, id string, d time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.final:
	case <-t.C:
	case <-ctx.Done():
	}
	return r.Get(id)
}

// TestAttackATaskResultAsksAJobsNextRequestLate: a host's tasks/result
// (Tasks.Ask) looks at the job, then waits with the registry's Wait without
// onChange, which returns only at the job's end or after taskWaitStep (a
// minute): a request the job makes meanwhile — its first, when the host
// reads the result before the task is input_required, or its second after
// the host answered the first — reaches the host only a minute later, while
// tasks/get has said input_required all along. A poll asks at once.
func TestAttackATaskResultAsksAJobsNextRequestLate(t *testing.T) {
	j := &registryLikeJobs{snap: jobs.Snapshot{ID: "job-a", Status: jobs.StatusRunning}, final: make(chan struct{})}
	defer close(j.final)
	host := &fakeHost{pr: approvals.PendingRequest{ID: pendingID, JobID: "job-a", Tool: "Bash", Summary: "make deploy", Expires: time.Now().Add(5 * time.Minute)}}
	tasks := NewTasks(j, host)
	tasks.Bind("task-1", "job-a")
	asked := make(chan struct{}, 1)
	elicit := func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- struct{}{}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go tasks.Ask(ctx, "task-1", elicit)
	time.Sleep(100 * time.Millisecond) // Ask has looked: the job runs
	j.mu.Lock()
	j.snap.Status, j.snap.Approval = jobs.StatusWaitingApproval, &jobs.ApprovalInfo{ID: pendingID, Summary: "make deploy"}
	j.mu.Unlock()
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Errorf("the job waits for a person, but its host's tasks/result has not asked after 5 s (it looks again after %s)", taskWaitStep)
	}
}

package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// MCP Tasks (protocol 2025-11-25): a host may call deepseek_agent_start,
// deepseek_agent_continue or deepseek_review as a task. mcp-go answers the
// call at once with the task and runs the handler on; the handler starts the
// job as always, tells the server which job the task is (WithTaskCall's
// bind), and returns only when the job has ended, with the payload a poll of
// the ended job would give — what tasks/result hands the host. One task is
// one job: tasks/get shows the job's state (TaskState), tasks/cancel cancels
// the job.

// TaskSupport is how the job tools take task augmentation: a host that does
// not ask for a task sees them as before.
var TaskSupport = mcp.WithTaskSupport(mcp.TaskSupportOptional)

type taskCallKey struct{}

// WithTaskCall marks ctx as the handler of a task-augmented call: bind is
// told the id of the job the call started, before the handler waits for it.
func WithTaskCall(ctx context.Context, bind func(jobID string)) context.Context {
	return context.WithValue(ctx, taskCallKey{}, bind)
}

func taskBind(ctx context.Context) func(string) {
	bind, _ := ctx.Value(taskCallKey{}).(func(string))
	return bind
}

// taskWaitStep is how long one wait of a task's handler lasts before it
// looks again; the job's end wakes it at once.
const taskWaitStep = time.Minute

// waitTask waits for the job a task started to end, whatever becomes of the
// call's request: over HTTP it ended with the answer that carried the task,
// and a task's cancel cancels the job itself, which ends this wait too. It
// answers with the ended job's payload.
func waitTask(ctx context.Context, j AgentJobs, o AgentToolOptions, snap jobs.Snapshot) *mcp.CallToolResult {
	wctx := context.WithoutCancel(ctx)
	for !snap.Status.Final() {
		next, err := j.Wait(wctx, snap.ID, taskWaitStep, nil)
		if err != nil {
			return mcp.NewToolResultError(err.Error())
		}
		snap = next
	}
	return agentResult(ctx, o, snap)
}

// TaskState is what tasks/get says of a task's job while it runs: working,
// or input_required while a person must decide one of its calls, with a
// status message a person reads.
func TaskState(s jobs.Snapshot) (mcp.TaskStatus, string) {
	switch s.Status {
	case jobs.StatusWaitingApproval:
		msg := fmt.Sprintf("Job %s waits for a person to decide one of its calls", s.ID)
		if a := s.Approval; a != nil {
			msg = fmt.Sprintf("Job %s waits for a person to decide this call: %s. `bridgectl approve %s` or `bridgectl deny %s` on the bridge's machine answers it", s.ID, a.Summary, a.ID, a.ID)
		}
		return mcp.TaskStatusInputRequired, msg
	case jobs.StatusQueued:
		return mcp.TaskStatusWorking, fmt.Sprintf("Job %s is queued (position %d)", s.ID, s.QueuePosition)
	}
	return mcp.TaskStatusWorking, fmt.Sprintf("Job %s is %s (%s so far)", s.ID, s.Status, plural(s.Steps, "tool call"))
}

// AgentGetter is what tasks/get reads a job's state with.
type AgentGetter interface {
	Get(id string) (jobs.Snapshot, error)
}

var _ AgentGetter = (*jobs.Registry)(nil)

// Tasks is which job each running task is, for the server's task hooks: a
// task's call is recorded when it begins, bound to its job once it has
// started it, and forgotten when it returns (the job has ended, and
// tasks/get reads mcp-go's own end state from then on).
type Tasks struct {
	j    AgentJobs
	host HostApprovals // nil: a task's questions are answered with bridgectl only
	mu   sync.Mutex
	// calls are the tasks whose calls run (Begin to End): the job each is
	// bound to ("" until its call has started it), and whether the host
	// cancelled it before then.
	calls map[string]*taskCall
}

type taskCall struct {
	job       string
	cancelled bool
}

// NewTasks returns the table of the tasks of j's jobs; host, when set, is
// the queue a task's host may decide the job's requests in (Ask).
func NewTasks(j AgentJobs, host HostApprovals) *Tasks {
	return &Tasks{j: j, host: host, calls: map[string]*taskCall{}}
}

// Begin records that task taskID's call runs; End, that it has returned.
func (t *Tasks) Begin(taskID string) {
	t.mu.Lock()
	t.calls[taskID] = &taskCall{}
	t.mu.Unlock()
}

// End forgets task taskID: its call has returned, and mcp-go's record of
// the task says the rest.
func (t *Tasks) End(taskID string) {
	t.mu.Lock()
	delete(t.calls, taskID)
	t.mu.Unlock()
}

// Bind records that task taskID is job jobID. A task the host cancelled
// while its call was still starting the job has the job cancelled now.
func (t *Tasks) Bind(taskID, jobID string) {
	t.mu.Lock()
	c := t.calls[taskID]
	cancelled := c != nil && c.cancelled
	if c != nil {
		c.job = jobID
	}
	t.mu.Unlock()
	if cancelled {
		t.cancelJob(jobID)
	}
}

// Len is how many tasks' calls run.
func (t *Tasks) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls)
}

// job is task taskID's job ("" before its call has started it, or once the
// call has returned), and whether the host cancelled the task.
func (t *Tasks) job(taskID string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.calls[taskID]; c != nil {
		return c.job, c.cancelled
	}
	return "", false
}

// Describe sets a working task's status and message from its job's state
// (TaskState): input_required while a person must decide. A task that is not
// bound, or has ended in mcp-go's record, is left as it is.
func (t *Tasks) Describe(task *mcp.Task) {
	g, ok := t.j.(AgentGetter)
	if !ok || task.Status != mcp.TaskStatusWorking {
		return
	}
	id, cancelled := t.job(task.TaskId)
	if id == "" || cancelled {
		return
	}
	snap, err := g.Get(id)
	if err != nil || snap.Status.Final() {
		return // ending: the call is about to return the job's payload
	}
	task.Status, task.StatusMessage = TaskState(snap)
	every := int64(taskPollEvery / time.Millisecond)
	task.PollInterval = &every
}

// taskPollEvery is the poll interval tasks/get suggests for a running job.
const taskPollEvery = 2 * time.Second

// Cancelled cancels the job of a task the host cancelled (tasks/cancel), in
// the background: mcp-go calls this with its tasks locked, and a cancel
// waits for the harness to be gone. The task's call then returns, as the
// job has ended.
func (t *Tasks) Cancelled(taskID string) {
	t.mu.Lock()
	var job string
	if c := t.calls[taskID]; c != nil {
		c.cancelled, job = true, c.job // a job started after this is cancelled at Bind
	}
	t.mu.Unlock()
	if job != "" {
		t.cancelJob(job)
	}
}

// cancelJob cancels job id as its caller, in the background.
func (t *Tasks) cancelJob(id string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
		defer cancel()
		_, _ = t.j.CancelBy(ctx, id, jobs.StopCancelledByCaller) // the job's own record says how it ended
	}()
}

// Elicit asks the host's user a question (mcp-go's RequestElicitation, on
// the connection of the host's tasks/result).
type Elicit func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

// Ask is the tasks way of asking the host's user (protocol 2025-11-25): a
// host reads a task that is input_required with tasks/result, and the
// questions come on that request. For as long as the task's job runs and
// the request lasts, each request of the job that waits for a person is
// asked once with elicit, the question tied to the task, and the answer
// decided with the host as its channel; the first answer wins, whether it
// comes from the host or from bridgectl. It returns when the job has ended,
// the request has, or the host cannot be asked (bridgectl still answers).
// The server calls it only on a connection whose host may be asked.
func (t *Tasks) Ask(ctx context.Context, taskID string, elicit Elicit) {
	g, ok := t.j.(AgentGetter)
	id, cancelled := t.job(taskID)
	if !ok || t.host == nil || id == "" || cancelled {
		return
	}
	asked := map[string]bool{}
	// askable: a request of the job's not asked about yet.
	askable := func(s jobs.Snapshot) bool {
		return s.Status == jobs.StatusWaitingApproval && s.Approval != nil && !asked[s.Approval.ID]
	}
	for ctx.Err() == nil {
		if _, cancelled := t.job(taskID); cancelled {
			return
		}
		snap, err := g.Get(id)
		if err != nil || snap.Status.Final() {
			return
		}
		if a := snap.Approval; askable(snap) {
			asked[a.ID] = true
			pr, err := t.host.Request(a.ID)
			now := time.Now()
			if err == nil && pr.JobID == id && now.Before(pr.Expires) {
				params := hostQuestionParams(pr, snap, now)
				params.Meta = mcp.NewMetaFromMap(map[string]any{mcp.RelatedTaskMetaKey: map[string]any{"taskId": taskID}})
				res, err := elicit(ctx, mcp.ElicitationRequest{Params: params})
				if err != nil {
					return // the host cannot answer here: bridgectl still can
				}
				approve, reason := hostDecision(res)
				// ErrAlreadyDecided, ErrExpired: answered first elsewhere,
				// and that answer stands; the job's state says what came of it.
				_ = t.host.DecideVia(pr.ID, approve, reason, HostUser, approvals.ChannelHost)
			}
		}
		// Until the job ends or has a request not asked about yet: Wait
		// itself returns only at the job's end or the step's.
		wctx, stop := context.WithCancel(ctx)
		_, err = t.j.Wait(wctx, id, taskWaitStep, func(s jobs.Snapshot) {
			if askable(s) {
				stop()
			}
		})
		stop()
		if err != nil {
			return
		}
	}
}

package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// taskJobs is a registry whose jobs the test moves by hand: set changes a
// job's state and wakes every Wait.
type taskJobs struct {
	mu      sync.Mutex
	snaps   map[string]jobs.Snapshot
	changed chan struct{}
	starts  int
	cancels []string
	waiting int           // Waits under way
	moved   chan struct{} // closed and replaced when waiting or cancels change
}

func newTaskJobs() *taskJobs {
	return &taskJobs{snaps: map[string]jobs.Snapshot{}, changed: make(chan struct{}), moved: make(chan struct{})}
}

func (j *taskJobs) Start(_ context.Context, req jobs.StartRequest) (jobs.Snapshot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.starts++
	s := jobs.Snapshot{ID: "job-" + string(rune('a'+j.starts-1)), Status: jobs.StatusRunning, Task: req.Task, Workspace: req.Workspace, CreatedAt: time.Now()}
	j.snaps[s.ID] = s
	return s, nil
}

func (j *taskJobs) set(id string, f func(*jobs.Snapshot)) {
	j.mu.Lock()
	s := j.snaps[id]
	f(&s)
	j.snaps[id] = s
	close(j.changed)
	j.changed = make(chan struct{})
	j.mu.Unlock()
}

func (j *taskJobs) Get(id string) (jobs.Snapshot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s, ok := j.snaps[id]
	if !ok {
		return jobs.Snapshot{}, jobs.ErrUnknownJob
	}
	return s, nil
}

func (j *taskJobs) Wait(ctx context.Context, id string, d time.Duration, _ func(jobs.Snapshot)) (jobs.Snapshot, error) {
	j.mu.Lock()
	s, ch := j.snaps[id], j.changed
	j.waiting++
	j.moveLocked()
	j.mu.Unlock()
	defer func() { j.mu.Lock(); j.waiting--; j.moveLocked(); j.mu.Unlock() }()
	if s.Status.Final() {
		return s, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
	return j.Get(id)
}

func (j *taskJobs) CancelBy(_ context.Context, id string, by jobs.StopReason) (jobs.Snapshot, error) {
	j.mu.Lock()
	j.cancels = append(j.cancels, id+":"+string(by))
	j.moveLocked()
	j.mu.Unlock()
	j.set(id, func(s *jobs.Snapshot) { s.Status, s.StopReason = jobs.StatusCancelled, by })
	return j.Get(id)
}

func (j *taskJobs) moveLocked() {
	close(j.moved)
	j.moved = make(chan struct{})
}

// until returns once cond holds of the stub's state, woken by each change.
func (j *taskJobs) until(t *testing.T, what string, cond func(starts int, cancels []string, waiting int) bool) {
	t.Helper()
	for {
		j.mu.Lock()
		ok, moved := cond(j.starts, j.cancels, j.waiting), j.moved
		j.mu.Unlock()
		if ok {
			return
		}
		waitFor(t, moved, 10*time.Second, what)
	}
}

func (j *taskJobs) state() (starts int, cancels []string, waiting int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.starts, append([]string(nil), j.cancels...), j.waiting
}

// taskClient is mcp-go's client, initialized with protocol 2025-11-25, and
// its transport for the task-augmented tools/call the client has no call for.
type taskClient struct {
	*mcpclient.Client
	tr *transport.StreamableHTTP
	n  int64
}

func newTaskClient(t *testing.T, url string) *taskClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "tasks-test", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capabilities.Tasks == nil {
		t.Fatalf("initialize offers no tasks: %+v", res.Capabilities)
	}
	return &taskClient{Client: c, tr: tr, n: 100}
}

// startTask calls tool as a task and returns the task it became.
func (c *taskClient) startTask(t *testing.T, tool string, args map[string]any, ttl *int64) mcp.Task {
	t.Helper()
	c.n++
	resp, err := c.tr.SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(c.n), Method: "tools/call",
		Params: map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": ttl}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		t.Fatalf("tools/call as a task: %+v", resp.Error)
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" {
		t.Fatalf("tools/call as a task answered %s (%v), want a task", resp.Result, err)
	}
	return created.Task
}

func (c *taskClient) get(t *testing.T, id string) *mcp.GetTaskResult {
	t.Helper()
	r, err := c.GetTask(t.Context(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (c *taskClient) result(t *testing.T, id string) *mcp.TaskResultResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // tasks/result waits for the end
	defer cancel()
	r, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func resultText(r *mcp.TaskResultResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestAJobRunsAsATask: a client of MCP Tasks starts a job as a task; the task
// says input_required while a person decides one of the job's calls, and
// working again once decided; tasks/result is the ended job's payload, and
// the call returns when the job ends.
func TestAJobRunsAsATask(t *testing.T) {
	j := newTaskJobs()
	env := newTestEnv(t, Options{Jobs: j})
	c := newTaskClient(t, env.url)
	task := c.startTask(t, "deepseek_agent_start", map[string]any{"task": "fix it", "workspace": "/w"}, nil)
	if task.Status != mcp.TaskStatusWorking {
		t.Fatalf("created task is %q, want working", task.Status)
	}
	maxTTL := (env.srv.o.Config.JobTimeout + taskKeep).Milliseconds()
	if task.TTL == nil || *task.TTL != maxTTL {
		t.Errorf("task without a TTL got %v, want the bound %d ms", task.TTL, maxTTL)
	}
	// The handler binds the task to its job, then waits for the job.
	j.until(t, "the task's call to wait for its job", func(_ int, _ []string, w int) bool { return w == 1 })
	if g := c.get(t, task.TaskId); g.Status != mcp.TaskStatusWorking || !strings.Contains(g.StatusMessage, "job-a is running") {
		t.Fatalf("tasks/get of a running job: %q %q", g.Status, g.StatusMessage)
	}

	j.set("job-a", func(s *jobs.Snapshot) {
		s.Status, s.Approval = jobs.StatusWaitingApproval, &jobs.ApprovalInfo{ID: "apr-1", Summary: "Bash: make deploy"}
	})
	g := c.get(t, task.TaskId)
	if g.Status != mcp.TaskStatusInputRequired || !strings.Contains(g.StatusMessage, "Bash: make deploy") || !strings.Contains(g.StatusMessage, "bridgectl approve apr-1") {
		t.Fatalf("tasks/get of a job waiting for a person: %q %q", g.Status, g.StatusMessage)
	}
	if g.PollInterval == nil || *g.PollInterval != 2000 {
		t.Errorf("pollInterval %v, want 2000 ms", g.PollInterval)
	}
	list, err := c.ListTasks(t.Context(), mcp.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Status != mcp.TaskStatusInputRequired {
		t.Fatalf("tasks/list: %+v %v", list, err)
	}

	j.set("job-a", func(s *jobs.Snapshot) { s.Status, s.Approval = jobs.StatusRunning, nil })
	if g := c.get(t, task.TaskId); g.Status != mcp.TaskStatusWorking {
		t.Fatalf("decided, the task is %q, want working", g.Status)
	}

	j.set("job-a", func(s *jobs.Snapshot) {
		s.Status, s.Result, s.Nonce, s.StopReason = jobs.StatusDone, "fixed the off-by-one", "n-123", jobs.StopCompleted
	})
	r := c.result(t, task.TaskId)
	if r.IsError || !strings.Contains(resultText(r), "fixed the off-by-one") {
		t.Fatalf("tasks/result: IsError=%v %q", r.IsError, resultText(r))
	}
	sc, _ := json.Marshal(r.StructuredContent)
	if !strings.Contains(string(sc), `"status":"done"`) || !strings.Contains(string(sc), `"nonce":"n-123"`) {
		t.Fatalf("tasks/result structuredContent: %s", sc)
	}
	if g := c.get(t, task.TaskId); g.Status != mcp.TaskStatusCompleted {
		t.Fatalf("ended job's task is %q, want completed", g.Status)
	}
	j.until(t, "the task's call to return", func(_ int, _ []string, w int) bool { return w == 0 })
	if bound := env.srv.tasks.Len(); bound != 0 {
		t.Errorf("%d tasks still bound after their calls returned", bound)
	}
}

// TestCancellingATaskCancelsItsJob: tasks/cancel cancels the job, as the
// caller, and the task's call returns.
func TestCancellingATaskCancelsItsJob(t *testing.T) {
	j := newTaskJobs()
	env := newTestEnv(t, Options{Jobs: j})
	c := newTaskClient(t, env.url)
	ttl := int64(60_000)
	task := c.startTask(t, "deepseek_agent_start", map[string]any{"task": "fix it", "workspace": "/w"}, &ttl)
	j.until(t, "the task's call to wait for its job", func(_ int, _ []string, w int) bool { return w == 1 })
	res, err := c.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
	if err != nil || res.Status != mcp.TaskStatusCancelled {
		t.Fatalf("tasks/cancel: %+v %v", res, err)
	}
	j.until(t, "the job's cancel and the call's return", func(_ int, c []string, w int) bool { return len(c) == 1 && w == 0 })
	if _, cancels, _ := j.state(); cancels[0] != "job-a:"+string(jobs.StopCancelledByCaller) {
		t.Fatalf("cancels %v, want job-a by the caller", cancels)
	}
	if s, _ := j.Get("job-a"); s.Status != jobs.StatusCancelled {
		t.Fatalf("job is %s, want cancelled", s.Status)
	}
}

// TestATaskCallsArgumentsAreChecked: mcp-go runs a task-augmented call
// without checking its arguments; the bridge checks them, with the refusal
// a plain call gets, and starts no job.
func TestATaskCallsArgumentsAreChecked(t *testing.T) {
	j := newTaskJobs()
	env := newTestEnv(t, Options{Jobs: j})
	c := newTaskClient(t, env.url)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"task": "x", "workspace": "/w", "modle": "m"}, `unknown argument "modle"`},
		{map[string]any{"task": "x"}, "workspace is required"},
		{map[string]any{"task": "x", "workspace": "/w", "max_steps": "many"}, "max_steps must be"},
	} {
		task := c.startTask(t, "deepseek_agent_start", tc.args, nil)
		r := c.result(t, task.TaskId)
		if !r.IsError || !strings.Contains(resultText(r), tc.want) {
			t.Errorf("%v: IsError=%v %q, want the refusal %q", tc.args, r.IsError, resultText(r), tc.want)
		}
	}
	if starts, _, _ := j.state(); starts != 0 {
		t.Fatalf("%d jobs started from refused arguments", starts)
	}
}

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// Attack review of MCP Tasks for the job tools. Each test here states what
// should hold and fails on the code it was written against.

// caseSplitCall is a tools/call the router's inspectBody reads as "ping":
// its last key is "METHOD" (encoding/json matches a struct's keys without
// regard to case, the last one wins). Its id 1.0 is one mcp-go would not
// echo byte for byte, so exactIDs re-encodes the body through a map, which
// keeps "METHOD" and "method" apart and writes them sorted: "METHOD" first,
// "method" last, and mcp-go, reading the re-encoded body the same way, sees
// tools/call.
func caseSplitCall(tool string, args map[string]any, task bool) string {
	params := map[string]any{"name": tool, "arguments": args}
	if task {
		params["task"] = map[string]any{}
	}
	p, _ := json.Marshal(params)
	return `{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":` + string(p) + `,"METHOD":"ping"}`
}

// endedJobs is taskJobs whose jobs end as they start (done), so a plain
// call of deepseek_agent_start answers at once.
type endedJobs struct{ *taskJobs }

func (j endedJobs) Start(ctx context.Context, req jobs.StartRequest) (jobs.Snapshot, error) {
	s, err := j.taskJobs.Start(ctx, req)
	if err == nil {
		j.set(s.ID, func(s *jobs.Snapshot) {
			s.Status, s.Result, s.Nonce, s.StopReason = jobs.StatusDone, "ok", "n", jobs.StopCompleted
		})
		s, err = j.Get(s.ID)
	}
	return s, err
}

func envWith(t *testing.T, j tools.AgentJobs, vars map[string]string) *testEnv {
	t.Helper()
	vars["MCP_PATH_SECRET"], vars["DEEPSEEK_API_KEY"], vars["BRIDGE_STATE_DIR"] = testSecret, testKey, t.TempDir()
	cfg, err := config.LoadFrom("", envMap(vars))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the bucket does not refill
	return newTestEnv(t, Options{Config: cfg, Jobs: j, Now: func() time.Time { return now }})
}

// TestAttackCaseSplitMethodSkipsTheRateLimit: with RATE_LIMIT_PER_MINUTE=1,
// a tools/call spelled with a second "METHOD" key and a float id is not
// counted by the router (inspectBody reads "ping") while mcp-go runs it as
// tools/call (exactIDs re-encodes the body with its keys sorted). Plain
// calls start a job each past the limit; task-augmented ones each leave a
// task entry (and its TTL goroutine, for the job timeout plus an hour) in
// mcp-go's store, with no bound at all. Both should be refused with 429
// after the first.
func TestAttackCaseSplitMethodSkipsTheRateLimit(t *testing.T) {
	j := endedJobs{newTaskJobs()}
	env := envWith(t, j, map[string]string{"RATE_LIMIT_PER_MINUTE": "1"})
	args := map[string]any{"task": "x", "workspace": "/w"}
	// The one call a minute allows, spelled plainly: counted.
	if r := post(t, env.url, callBody(1, "deepseek_agent_start", args, nil), mcpHeaders); r.status != http.StatusOK {
		t.Fatalf("first call: %d %q", r.status, r.body)
	}
	if r := post(t, env.url, callBody(2, "deepseek_agent_start", args, nil), mcpHeaders); r.status != http.StatusTooManyRequests {
		t.Fatalf("second plain call: %d, want 429", r.status)
	}
	admitted := 0
	for i := 0; i < 5; i++ {
		if r := post(t, env.url, caseSplitCall("deepseek_agent_start", args, false), mcpHeaders); r.status != http.StatusTooManyRequests {
			admitted++
		}
	}
	if starts, _, _ := j.state(); admitted > 0 || starts > 1 {
		t.Errorf("RATE_LIMIT_PER_MINUTE=1, the bucket spent: %d more tools/call admitted, %d jobs started in all, want 429s and 1 job", admitted, starts)
	}
	before, _, _ := j.state()
	admitted = 0
	for i := 0; i < 20; i++ {
		if r := post(t, env.url, caseSplitCall("deepseek_agent_start", args, true), mcpHeaders); r.status != http.StatusTooManyRequests {
			admitted++
		}
	}
	c := newTaskClient(t, env.url)
	list, err := c.ListTasks(t.Context(), mcp.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range list.Tasks {
		// What holds: without the router's task slot the call is refused
		// (taskCalls), so these tasks start no job.
		if r := c.result(t, task.TaskId); !r.IsError || !strings.Contains(resultText(r), "could not run as a task here") {
			t.Errorf("a task made without the router's slot: IsError=%v %q", r.IsError, resultText(r))
		}
	}
	if after, _, _ := j.state(); after != before {
		t.Errorf("%d jobs started from task-augmented calls without the router's slot", after-before)
	}
	if admitted > 0 || len(list.Tasks) > 0 {
		t.Errorf("RATE_LIMIT_PER_MINUTE=1, the bucket spent: %d task-augmented tools/call admitted, mcp-go holds %d tasks (each kept %s), want none",
			admitted, len(list.Tasks), env.srv.o.Config.JobTimeout+taskKeep)
	}
}

// slowStartJobs is taskJobs whose Start waits for release: the time a real
// Start spends admitting the workspace (and, for a review, reading its git
// scope) before the task's call can bind the task to the job.
type slowStartJobs struct {
	*taskJobs
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (j *slowStartJobs) Start(ctx context.Context, req jobs.StartRequest) (jobs.Snapshot, error) {
	j.once.Do(func() { close(j.entered) })
	<-j.release
	return j.taskJobs.Start(ctx, req)
}

// TestAttackCancelBeforeTheJobIsBoundLeavesItRunning: a host cancels its
// task while the task's call is still starting the job. tasks/cancel
// answers "cancelled" — and mcp-go's task is over for good — but the
// task-cancelled hook found no job bound yet, and the call, which runs
// without the task's context (context.WithoutCancel), starts the job
// anyway, binds the cancelled task to it and waits for its end. The job
// runs to its end though the host was told its task was cancelled; it
// should be cancelled (or never started).
func TestAttackCancelBeforeTheJobIsBoundLeavesItRunning(t *testing.T) {
	j := &slowStartJobs{taskJobs: newTaskJobs(), entered: make(chan struct{}), release: make(chan struct{})}
	env := newTestEnv(t, Options{Jobs: j})
	c := newTaskClient(t, env.url)
	task := c.startTask(t, "deepseek_agent_start", map[string]any{"task": "fix it", "workspace": "/w"}, nil)
	waitFor(t, j.entered, 10*time.Second, "the task's call to start its job")
	res, err := c.CancelTask(t.Context(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: task.TaskId}})
	if err != nil || res.Status != mcp.TaskStatusCancelled {
		t.Fatalf("tasks/cancel: %+v %v", res, err)
	}
	close(j.release)
	// The job its call then starts is cancelled at once, as the caller.
	j.until(t, "the job's cancel", func(s int, c []string, _ int) bool { return s == 1 && len(c) == 1 })
	if _, cancels, _ := j.state(); cancels[0] != "job-a:"+string(jobs.StopCancelledByCaller) {
		t.Fatalf("cancels %v, want job-a by the caller", cancels)
	}
	j.until(t, "the task's call to return", func(_ int, _ []string, w int) bool { return w == 0 })
}

// TestAttackAnExpiredTaskLeavesItsJobRunning: a host asks for a TTL shorter
// than its job runs (the spec's TTL is the retention from creation). mcp-go
// drops a task at its TTL and cancels its execution context — which the
// bridge's call does not listen to — so the job would run on past every
// handle the host has. The bridge gives every task the TTL of the longest a
// job may run plus taskKeep, whatever the host asked.
func TestAttackAnExpiredTaskLeavesItsJobRunning(t *testing.T) {
	j := newTaskJobs()
	env := newTestEnv(t, Options{Jobs: j})
	c := newTaskClient(t, env.url)
	want := (env.srv.o.Config.JobTimeout + taskKeep).Milliseconds()
	for _, ask := range []int64{200, want + 1} {
		task := c.startTask(t, "deepseek_agent_start", map[string]any{"task": "fix it", "workspace": "/w"}, &ask)
		if task.TTL == nil || *task.TTL != want {
			t.Errorf("a task asking a TTL of %d ms got %v, want the bound %d ms", ask, task.TTL, want)
		}
	}
	j.until(t, "both calls to wait for their jobs", func(_ int, _ []string, w int) bool { return w == 2 })
	for _, id := range []string{"job-a", "job-b"} {
		j.set(id, func(s *jobs.Snapshot) { s.Status = jobs.StatusDone })
	}
	j.until(t, "the calls to return", func(_ int, _ []string, w int) bool { return w == 0 })
}

// TestAttackCaseSplitCancelReachesAnotherClientsCall: the router drops every
// notifications/cancelled, because in stateless mode mcp-go keys in-flight
// calls by request id alone and one client's cancel of id 7 would cancel
// another client's call 7. Spelled with a second "METHOD" key and a float
// progressToken (so exactIDs re-encodes the body with its keys sorted), the
// router reads the method as "ping" and forwards it, and mcp-go reads
// notifications/cancelled: another client's call 7 is cancelled.
func TestAttackCaseSplitCancelReachesAnotherClientsCall(t *testing.T) {
	j := newTaskJobs()
	const window = 4 * time.Second
	env := envWith(t, j, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "4000"})
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		post(t, env.url, callBody(7, "deepseek_agent_start", map[string]any{"task": "x", "workspace": "/w"}, nil), mcpHeaders)
		done <- time.Since(start)
	}()
	j.until(t, "the victim's call to start its job", func(s int, _ []string, _ int) bool { return s == 1 })
	time.Sleep(300 * time.Millisecond)
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x","_meta":{"progressToken":1.0}},"METHOD":"ping"}`
	if r := post(t, env.url, cancel, mcpHeaders); r.status != http.StatusAccepted {
		t.Logf("cancel answered %d %q", r.status, r.body)
	}
	took := <-done
	t.Cleanup(func() { j.set("job-a", func(s *jobs.Snapshot) { s.Status = jobs.StatusDone }) })
	if took < window-500*time.Millisecond {
		t.Errorf("another client's notifications/cancelled ended call 7 after %s, before its %s sync window", took.Round(time.Millisecond), window)
	}
}

// TestParamsOfAnyTypeStillCountAgainstTheRateLimit: the router reads a
// tools/call's params only for its task; params that are not an object
// (mcp-go refuses them) still count as a tools/call for the rate limit.
func TestParamsOfAnyTypeStillCountAgainstTheRateLimit(t *testing.T) {
	for _, params := range []string{`[1]`, `"x"`, `7`} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
		if m := inspectBody(body); m.method != "tools/call" || m.toolCalls != 1 || m.task {
			t.Errorf("params %s: read %+v, want one tools/call without a task", params, m)
		}
	}
}

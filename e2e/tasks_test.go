package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// tasksClient is mcp-go's client (protocol 2025-11-25, which has tasks/get,
// tasks/list, tasks/result and tasks/cancel), with its transport for the
// task-augmented tools/call the client has no method for.
type tasksClient struct {
	*mcpclient.Client
	tr transport.Interface
}

func newTasksClient(t *testing.T, url string) *tasksClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	return startTasksClient(t, tr)
}

// startTasksClient starts mcp-go's client on tr and initializes it with
// protocol 2025-11-25.
func startTasksClient(t *testing.T, tr transport.Interface, opts ...mcpclient.ClientOption) *tasksClient {
	t.Helper()
	c := mcpclient.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var init mgmcp.InitializeRequest
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mgmcp.Implementation{Name: "e2e-tasks", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if tk := res.Capabilities.Tasks; tk == nil || tk.Cancel == nil || tk.List == nil {
		t.Fatalf("the bridge offers no tasks with list and cancel: %+v", res.Capabilities.Tasks)
	}
	return &tasksClient{Client: c, tr: tr}
}

// startTask calls deepseek_agent_start as a task: the answer is the task,
// at once.
func (c *tasksClient) startTask(t *testing.T, id int64, args map[string]any) mgmcp.Task {
	t.Helper()
	resp, err := c.tr.SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mgmcp.NewRequestId(id), Method: "tools/call",
		Params: map[string]any{"name": "deepseek_agent_start", "arguments": args, "task": map[string]any{}}})
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/call as a task: %v %+v", err, resp)
	}
	var created mgmcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" || created.Task.Status != mgmcp.TaskStatusWorking {
		t.Fatalf("tools/call as a task answered %s (%v), want a working task", resp.Result, err)
	}
	return created.Task
}

// waitTaskStatus polls tasks/get until the task is in status, and returns it.
func (c *tasksClient) waitTaskStatus(t *testing.T, id string, status mgmcp.TaskStatus) *mgmcp.GetTaskResult {
	t.Helper()
	var last *mgmcp.GetTaskResult
	var err error
	if !poll.Until(jobLimit, func() bool {
		last, err = c.GetTask(t.Context(), mgmcp.GetTaskRequest{Params: mgmcp.GetTaskParams{TaskId: id}})
		return err == nil && (last.Status == status || last.Status.IsTerminal())
	}) || last.Status != status {
		if last != nil && last.Status.IsTerminal() {
			if r, rerr := c.TaskResult(t.Context(), mgmcp.TaskResultRequest{Params: mgmcp.TaskResultParams{TaskId: id}}); rerr == nil {
				b, _ := json.Marshal(r)
				t.Fatalf("task %s ended %s, never %s: its result %s", id, last.Status, status, b)
			}
		}
		t.Fatalf("task %s never became %s: last %+v %v", id, status, last, err)
	}
	return last
}

// doneResult reads a task's result (tasks/result waits for the job's end)
// and fails unless it is a done job's payload with its nonce.
func (c *tasksClient) doneResult(t *testing.T, id string) tools.AgentJobPayload {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), jobLimit)
	defer cancel()
	res, err := c.TaskResult(ctx, mgmcp.TaskResultRequest{Params: mgmcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/result: %v", err)
	}
	p := taskPayload(t, res)
	if res.IsError || p.Status != string(jobs.StatusDone) || !hexNonce.MatchString(p.Nonce) {
		t.Fatalf("tasks/result: IsError=%v status %s nonce %q: %s", res.IsError, p.Status, p.Nonce, p.Result)
	}
	return p
}

// taskPayload decodes a task's result as an agent job's payload.
func taskPayload(t *testing.T, r *mgmcp.TaskResultResult) tools.AgentJobPayload {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p tools.AgentJobPayload
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("task result %s: %v", b, err)
	}
	return p
}

// TestAJobAsAnMCPTask: a client of MCP Tasks (mcp-go's) starts a real job
// as a task. While the job's command waits for a person the task is
// input_required, its message naming the command and the approval; after
// `bridgectl approve` it runs on, and tasks/result is the ended job's
// payload with its nonce and the command's output. A second job started as
// a task is cancelled with tasks/cancel: the job ends cancelled by the
// caller and its processes are gone.
func TestAJobAsAnMCPTask(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	c := newTasksClient(t, g.URL())

	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo alpha && echo beta", "description": "two echoes"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("output: " + strings.Join(r.ToolResultTexts(), " | ")) }),
	)
	task := c.startTask(t, 1, map[string]any{"task": "Print alpha and beta.", "workspace": ws})
	waiting := c.waitTaskStatus(t, task.TaskId, mgmcp.TaskStatusInputRequired)
	pending, err := g.queue().Pending()
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending requests: %+v %v", pending, err)
	}
	for _, want := range []string{"echo alpha && echo beta", "bridgectl approve " + pending[0].ID} {
		if !strings.Contains(waiting.StatusMessage, want) {
			t.Errorf("input_required message lacks %q: %q", want, waiting.StatusMessage)
		}
	}
	if waiting.PollInterval == nil || *waiting.PollInterval <= 0 {
		t.Errorf("no poll interval: %+v", waiting.Task)
	}
	list, err := c.ListTasks(t.Context(), mgmcp.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Status != mgmcp.TaskStatusInputRequired {
		t.Errorf("tasks/list: %+v %v", list, err)
	}
	if out, err := g.bridgectl(t, "approve", pending[0].ID, "--reason", "e2e: tasks"); err != nil {
		t.Fatalf("bridgectl approve: %v\n%s", err, out)
	}
	if p := c.doneResult(t, task.TaskId); p.Result != "output: alpha\nbeta" {
		t.Fatalf("tasks/result: result %q", p.Result)
	}
	if got := c.waitTaskStatus(t, task.TaskId, mgmcp.TaskStatusCompleted); got.Status != mgmcp.TaskStatusCompleted {
		t.Fatalf("the ended job's task is %s", got.Status)
	}

	// A second job, cancelled as a task.
	ws2 := g.workspace(t, map[string]string{"wait.log": ""})
	g.d.ScriptAnthropic(tailTurn())
	task2 := c.startTask(t, 2, map[string]any{"task": "Wait.", "workspace": ws2})
	var id2 string // the job's id: the task's answer does not carry it
	if !poll.Until(jobLimit, func() bool {
		files, _ := filepath.Glob(filepath.Join(g.dir().Jobs(), "*.json"))
		for _, f := range files {
			var s jobs.Snapshot
			if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &s) == nil && s.Workspace == ws2 {
				id2 = s.ID
			}
		}
		return id2 != ""
	}) {
		t.Fatal("the second job has no record")
	}
	waitJobCommand(t, id2, "tail", jobLimit)
	cres, err := c.CancelTask(t.Context(), mgmcp.CancelTaskRequest{Params: mgmcp.CancelTaskParams{TaskId: task2.TaskId}})
	if err != nil || cres.Status != mgmcp.TaskStatusCancelled {
		t.Fatalf("tasks/cancel: %+v %v", cres, err)
	}
	cs := goSDKClient(t, g.URL())
	ended := waitSettled(t, cs, id2, jobLimit)
	if ended.P.Status != string(jobs.StatusCancelled) || ended.P.StopReason != string(jobs.StopCancelledByCaller) {
		t.Fatalf("the cancelled task's job: %s (%s): %s", ended.P.Status, ended.P.StopReason, ended.Text)
	}
	assertJobTreeGone(t, id2)
}

// elicitFunc is an mcp-go client's elicitation handler.
type elicitFunc func(context.Context, mgmcp.ElicitationRequest) (*mgmcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mgmcp.ElicitationRequest) (*mgmcp.ElicitationResult, error) {
	return f(ctx, r)
}

// TestAHostIsAskedOnItsTaskResult: a host on `bridge stdio` that answers
// elicitations starts a job as a task; the job's command waits for a person
// and the task is input_required; the host's tasks/result is where it is
// asked (the question tied to the task), its accept runs the command, and
// the same tasks/result then answers with the ended job. The audit names
// the host as the decision's channel.
func TestAHostIsAskedOnItsTaskResult(t *testing.T) {
	t.Parallel()
	jobModel := startDouble(t)
	jobModel.ScriptAnthropic(dt.ToolCalls(bash("ln -s README.md link")),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("saw: " + strings.Join(r.ToolResultTexts(), " | ")) }))
	envFile, state, root := writeStdioEnv(t, jobModel, nil)
	ws := readmeWorkspace(t, root)
	asked := make(chan mgmcp.ElicitationRequest, 4)
	tr := transport.NewStdio(binary(t, "bridge"), stdioHostEnv(t), "stdio", "--env", envFile)
	c := startTasksClient(t, tr, mcpclient.WithElicitationHandler(elicitFunc(func(_ context.Context, r mgmcp.ElicitationRequest) (*mgmcp.ElicitationResult, error) {
		asked <- r
		return &mgmcp.ElicitationResult{ElicitationResponse: mgmcp.ElicitationResponse{Action: mgmcp.ElicitationResponseActionAccept}}, nil
	})))
	task := c.startTask(t, 1, map[string]any{"task": "link the readme", "workspace": ws})
	c.waitTaskStatus(t, task.TaskId, mgmcp.TaskStatusInputRequired)
	p := c.doneResult(t, task.TaskId)
	if len(asked) != 1 {
		t.Fatalf("the host was asked %d times", len(asked))
	}
	q := <-asked
	for _, want := range []string{"ln -s README.md link", ws, "bridgectl approve "} {
		if !strings.Contains(q.Params.Message, want) {
			t.Errorf("the question lacks %q:\n%s", want, q.Params.Message)
		}
	}
	if rel, _ := q.Params.Meta.AdditionalFields[mgmcp.RelatedTaskMetaKey].(map[string]any); rel["taskId"] != task.TaskId {
		t.Errorf("the question is not tied to the task: %+v", q.Params.Meta)
	}
	if _, err := os.Lstat(filepath.Join(statedir.Dir{Root: state}.ChangesDir(p.JobID), "upper", "link")); err != nil {
		t.Errorf("the accepted command did not run: %v; result %q", err, p.Result)
	}
	recs, err := approvals.ReadAudit(statedir.Dir{Root: state}, true)
	if err != nil {
		t.Fatal(err)
	}
	decided := false
	for _, r := range recs {
		if r.JobID == p.JobID && r.Event == approvals.EventHuman {
			decided = r.Channel == approvals.ChannelHost && r.By == tools.HostUser && r.Decision == "allow"
		}
	}
	if !decided {
		t.Errorf("no allow by the host on record for job %s: %+v", p.JobID, recs)
	}
}

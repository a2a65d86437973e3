package server

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// MCP Tasks, on mcp-go's own task store (WithTaskCapabilities): a host that
// asks for a task when it calls a job tool (tools.TaskSupport) gets the task
// at once; mcp-go runs the tool's handler on after the request, and the
// handler returns when the job has ended (tools.waitTask). What mcp-go does
// not do is done here:
//
//   - it routes a task-augmented call before it checks the arguments
//     (handleTaskAugmentedToolCall): taskCalls checks them with the same
//     compiled schema, and the task ends with the same refusal a plain call
//     gets, before any job starts;
//   - its tasks know nothing of jobs: the task-created hook hands the task's
//     id to the handler (taskSlot), which binds it to the job it starts
//     (tools.Tasks), so tasks/get and tasks/list tell the job's state —
//     input_required while a person decides — and tasks/cancel cancels it;
//   - it keeps a task without a TTL forever, and drops one whose TTL has
//     passed while its job runs: every task gets the TTL of the longest a
//     job may run and taskKeep, whatever the host asked;
//   - a host that may be asked (BRIDGE_HOST_APPROVALS, and it answers
//     elicitations) is asked the job's questions on its tasks/result, as the
//     spec has it for an input_required task (tools.Tasks.Ask).
//
// The server is stateless, so mcp-go keys tasks by no session: whoever holds
// the endpoint (the capability path, or the socket) sees every task, as it
// sees every job with deepseek_agent_list.

// Bounds of the tasks.
const (
	// maxTasks is how many tasks may run at once; a job's own slots and
	// queue bound the jobs themselves.
	maxTasks = 64
	// taskKeep is how long an ended task's result stays to be read, beyond
	// the longest a job may run.
	taskKeep = time.Hour
)

// taskSlot carries the id mcp-go gives a task-augmented call, from its
// task-created hook to the handler it then runs for the call: both see the
// context of the call's request, which holds one message (batches are
// refused), and the hook runs before mcp-go starts the handler.
type taskSlot struct{ id string }

type taskSlotKey struct{}

func withTaskSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, taskSlotKey{}, &taskSlot{})
}

// taskID is the id of the task ctx's call runs as, "" for a plain call.
func taskID(ctx context.Context) string {
	if sl, ok := ctx.Value(taskSlotKey{}).(*taskSlot); ok {
		return sl.id
	}
	return ""
}

// taskTool reports whether the tool name may run as a task.
func (s *Server) taskTool(name string) bool {
	st := s.mcp.GetTool(name)
	return st != nil && st.Tool.Execution != nil && st.Tool.Execution.TaskSupport == mcp.TaskSupportOptional
}

// offersTasks reports whether any offered tool may run as a task.
func offersTasks(offered []mcpserver.ServerTool) bool {
	for _, st := range offered {
		if e := st.Tool.Execution; e != nil && e.TaskSupport == mcp.TaskSupportOptional {
			return true
		}
	}
	return false
}

// taskOptions are the server options that offer tasks.
func (s *Server) taskOptions() []mcpserver.ServerOption {
	th := &mcpserver.TaskHooks{}
	th.AddOnTaskCreated(func(ctx context.Context, m mcpserver.TaskMetrics) {
		if sl, ok := ctx.Value(taskSlotKey{}).(*taskSlot); ok {
			sl.id = m.TaskID
		}
	})
	th.AddOnTaskCancelled(func(_ context.Context, m mcpserver.TaskMetrics) { s.tasks.Cancelled(m.TaskID) })
	return []mcpserver.ServerOption{
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithTaskHooks(th),
		mcpserver.WithMaxConcurrentTasks(maxTasks),
	}
}

// addTaskHooks gives every task a TTL, and tasks/get and tasks/list the
// state of the task's job.
func (s *Server) addTaskHooks(h *mcpserver.Hooks) {
	maxTTL := (s.o.Config.JobTimeout + taskKeep).Milliseconds()
	h.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		// Every task gets the same TTL, whatever the host asked: longer
		// would keep an ended task too long, and shorter would have mcp-go
		// drop a task whose job still runs (the spec lets a receiver choose).
		if t := req.Params.Task; t != nil {
			ttl := maxTTL
			t.TTL = &ttl
		}
	})
	h.AddBeforeTaskResult(func(ctx context.Context, _ any, req *mcp.TaskResultRequest) {
		// The tasks way of asking the host's user: on this request, before
		// mcp-go waits for the task's end (tools.Tasks.Ask).
		if req != nil && s.o.HostApprovals != nil && s.hostMayAsk(ctx) {
			s.tasks.Ask(ctx, req.Params.TaskId, s.mcp.RequestElicitation)
		}
	})
	h.AddAfterGetTask(func(_ context.Context, _ any, _ *mcp.GetTaskRequest, res *mcp.GetTaskResult) {
		if res != nil {
			s.tasks.Describe(&res.Task)
		}
	})
	h.AddAfterListTasks(func(_ context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		if res != nil {
			for i := range res.Tasks {
				s.tasks.Describe(&res.Tasks[i])
			}
		}
	})
}

// taskCalls is the outermost tool middleware. A call that runs as a task has
// its arguments checked here, as mcp-go checks a plain call's, and is bound
// to the job its handler starts for as long as the handler runs.
func (s *Server) taskCalls(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := taskID(ctx)
		if id == "" {
			if req.Params.Task != nil && s.taskTool(req.Params.Name) {
				// mcp-go ran it as a task, but no hook named the task: its
				// arguments are unchecked, and its job could not be bound.
				return mcp.NewToolResultError("this call could not run as a task here (no task was recorded for it); call the tool again without task"), nil
			}
			return next(ctx, req)
		}
		s.tasks.Begin(id)
		defer s.tasks.End(id)
		ts, ok := s.schemas[req.Params.Name]
		if !ok {
			return mcp.NewToolResultError("tool " + req.Params.Name + " has no input schema to check its arguments with: refused"), nil
		}
		if text := ts.check(req.GetRawArguments()); text != "" {
			return mcp.NewToolResultError(text), nil
		}
		// The call's request has ended (over HTTP, with the answer that
		// carried the task), and with it the context mcp-go runs the
		// handler in: the job would not even start. The handler runs on
		// without it; tasks/cancel reaches the job through the task hooks
		// (tools.Tasks.Cancelled), a shutdown through the job's own end.
		ctx = context.WithoutCancel(ctx)
		return next(tools.WithTaskCall(ctx, func(jobID string) { s.tasks.Bind(id, jobID) }), req)
	}
}

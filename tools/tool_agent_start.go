package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentStartTool is deepseek_agent_start.
func AgentStartTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_start",
		mcp.WithDescription(fmt.Sprintf("Hand DeepSeek a task that needs hands: an agent (Claude Code driven by DeepSeek) reads, edits and runs commands in a workspace directory the owner granted. "+
			"Blocks up to %d s; a job that finishes by then is returned inline, otherwise you get its job_id to pass to deepseek_agent_poll. "+
			"A result is real only when status is done and it carries a nonce: quote the nonce with it.", int(o.SyncWindow/time.Second))),
		mcp.WithTitleAnnotation("Start a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("task", mcp.Required(), mcp.Description("what the agent should do, self-contained: it sees only this text and the workspace")),
		mcp.WithString("workspace", mcp.Required(), mcp.Description("absolute path of an existing directory inside the owner's allowed roots (DEEPSEEK_ALLOWED_ROOTS)")),
		stepsArg(o, "job"), timeoutArg(o, "job"),
		modelArg(o.Models), thinkingArg(), policyArg(o, false), contextArg(), acceptanceArg(), tsModeArg(),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
		TaskSupport,
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a startArgs
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		maxSteps, timeout := a.ceilings()
		model, thinking, err := o.Models.Resolve(a.Model, a.Thinking)
		if err != nil {
			return startError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		if err := a.checkPolicy(); err != nil {
			return startError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		if err := jobs.ValidateChecks(a.Acceptance); err != nil {
			return startError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		snap, err := j.Start(ctx, jobs.StartRequest{Task: a.Task, Workspace: a.Workspace,
			MaxSteps: maxSteps, Timeout: timeout,
			Model: model.ID, Thinking: thinking, Policy: a.Policy,
			Context: a.Context, Acceptance: a.Acceptance})
		if err != nil {
			return startError(err), nil
		}
		return waitInline(ctx, req, j, o, snap), nil
	}
	return tool, handler
}

func startError(err error) *mcp.CallToolResult {
	switch {
	case errors.Is(err, jobs.ErrWorkspace), errors.Is(err, jobs.ErrBadInput), errors.Is(err, jobs.ErrQueueFull), errors.Is(err, jobs.ErrClosed),
		errors.Is(err, jobs.ErrWorkspaceBusy):
		return mcp.NewToolResultError("The job was not started. " + err.Error())
	default:
		return mcp.NewToolResultError("The job was not started: " + err.Error())
	}
}

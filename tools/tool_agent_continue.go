package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentContinuer is what deepseek_agent_continue needs of the registry.
type AgentContinuer interface {
	Continue(ctx context.Context, req jobs.ContinueRequest) (jobs.Snapshot, error)
}

var _ AgentContinuer = (*jobs.Registry)(nil)

// AgentContinueTool is deepseek_agent_continue: a new job that resumes the
// conversation of one that ended (done or not), in the same workspace.
func AgentContinueTool(j AgentJobs, c AgentContinuer, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_continue",
		mcp.WithDescription(fmt.Sprintf("Continue an agent job that has ended (done, a ceiling, cancelled, a bridge restart) with a new message, e.g. \"go on\": "+
			"a new job (own job_id and nonce) resumes its conversation in the same workspace with the same permissions (a policy here only narrows them) and fresh ceilings. "+
			"Blocks up to %d s like deepseek_agent_start.", int(o.SyncWindow/time.Second))),
		mcp.WithTitleAnnotation("Continue a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the ended job to continue")),
		mcp.WithString("task", mcp.Required(), mcp.Description("the next message to the agent, e.g. \"go on\" or what to do differently")),
		stepsArg(o, "leg"), timeoutArg(o, "leg"),
		modelArg(o.Models), thinkingArg(), policyArg(o, true),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
		TaskSupport,
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a continueArgs
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		maxSteps, timeout := a.ceilings()
		var model, thinking string
		if a.Model != "" || a.Thinking != "" {
			m, t, err := o.Models.Resolve(a.Model, a.Thinking)
			if err != nil {
				return continueError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
			}
			model, thinking = m.ID, t
		}
		if err := a.checkPolicy(); err != nil {
			return continueError(fmt.Errorf("%w: %v", jobs.ErrBadInput, err)), nil
		}
		snap, err := c.Continue(ctx, jobs.ContinueRequest{JobID: strings.TrimSpace(a.JobID), Task: a.Task,
			MaxSteps: maxSteps, Timeout: timeout,
			Model: model, Thinking: thinking, Policy: a.Policy})
		if err != nil {
			return continueError(err), nil
		}
		return waitInline(ctx, req, j, o, snap), nil
	}
	return tool, handler
}

// continueArgs are deepseek_agent_continue's arguments.
type continueArgs struct {
	jobArgs
	JobID string `json:"job_id"`
}

func continueError(err error) *mcp.CallToolResult {
	msg := "The job was not continued: " + err.Error()
	if errors.Is(err, jobs.ErrUnknownJob) {
		msg += " (a job can be continued until its results expire: BRIDGE_RESULT_TTL_MS after it ended)"
	}
	return mcp.NewToolResultError(msg)
}

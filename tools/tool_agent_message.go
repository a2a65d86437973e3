package tools

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentMessenger is what deepseek_agent_message needs of the registry.
type AgentMessenger interface {
	Message(id, text, mode string) (jobs.Snapshot, error)
}

var _ AgentMessenger = (*jobs.Registry)(nil)

// AgentMessageTool is deepseek_agent_message: a message into a running job,
// after its current turn (follow_up) or instead of it (steer).
func AgentMessageTool(m AgentMessenger, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_message",
		mcp.WithDescription("Send a message to a running agent job. follow_up: the agent takes it once its current turn ends; steer: its current turn is interrupted and it takes this instead. "+
			"The job keeps its job_id; poll it for the outcome. A job that has ended takes no messages: continue it with deepseek_agent_continue."),
		mcp.WithTitleAnnotation("Message a running DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the running job")),
		mcp.WithString("message", mcp.Required(), mcp.Description("what the agent should do or know, self-contained")),
		mcp.WithString("mode", mcp.Enum(jobs.MessageFollowUp, jobs.MessageSteer), mcp.DefaultString(jobs.MessageFollowUp),
			mcp.Description("follow_up (default): after the current turn; steer: interrupt the current turn, then this")),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID   string `json:"job_id"`
			Message string `json:"message"`
			Mode    string `json:"mode"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		mode := a.Mode
		if mode == "" {
			mode = jobs.MessageFollowUp
		}
		snap, err := m.Message(strings.TrimSpace(a.JobID), a.Message, mode)
		switch {
		case errors.Is(err, jobs.ErrUnknownJob):
			return lookupError(err), nil
		case err != nil:
			return mcp.NewToolResultError("The message was not sent. " + err.Error()), nil
		}
		res := agentResult(ctx, o, snap)
		sent := "Message sent (" + mode + "): the agent takes it after its current turn. "
		if mode == jobs.MessageSteer {
			sent = "Message sent (steer): the agent's current turn was interrupted and it takes this next. "
		}
		res.Content = []mcp.Content{mcp.NewTextContent(sent + res.Content[0].(mcp.TextContent).Text)}
		return res, nil
	}
	return tool, handler
}

package tools

import (
	"context"
	"crypto/subtle"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentCancelTool is deepseek_agent_cancel.
func AgentCancelTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_cancel",
		mcp.WithDescription("Stop an agent job: its harness and every process it started are killed and the job ends as cancelled, without a result. A finished job is left as it is."),
		mcp.WithTitleAnnotation("Cancel a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the job_id deepseek_agent_start returned")),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID string `json:"job_id"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		cctx, cancel := context.WithTimeout(ctx, cancelWait)
		defer cancel()
		snap, err := j.CancelBy(cctx, strings.TrimSpace(a.JobID), cancelledBy(req, o.OwnerToken))
		if err != nil {
			return lookupError(err), nil
		}
		return agentResult(ctx, o, snap), nil
	}
	return tool, handler
}

// OwnerMetaKey is the _meta key under which bridgectl sends the owner token.
const OwnerMetaKey = "bridge/owner"

// cancelledBy is who a cancel call comes from: the owner when its _meta
// carries the owner token, else the caller.
func cancelledBy(req mcp.CallToolRequest, token string) jobs.StopReason {
	if token == "" || req.Params.Meta == nil {
		return jobs.StopCancelledByCaller
	}
	got, _ := req.Params.Meta.AdditionalFields[OwnerMetaKey].(string)
	if subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
		return jobs.StopCancelledByOwner
	}
	return jobs.StopCancelledByCaller
}

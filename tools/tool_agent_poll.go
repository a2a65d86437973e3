package tools

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentPollTool is deepseek_agent_poll.
func AgentPollTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_agent_poll",
		mcp.WithDescription("Check on an agent or review job. Waits up to wait_seconds and returns as soon as the job settles, starts waiting for a person's approval, or gets that person's answer. "+
			"Until status is done there is no result to report; on done, quote the nonce with the result."),
		mcp.WithTitleAnnotation("Poll a DeepSeek agent job"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("job_id", mcp.Required(), mcp.Description("the job_id deepseek_agent_start returned")),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithNumber("wait_seconds", mcp.Min(0), mcp.Max(MaxPollWait.Seconds()), mcp.DefaultNumber(DefaultPollWait.Seconds()),
			mcp.Description("how long to wait for the job to settle, 0 to 40 seconds (default 20)")),
		mcp.WithOutputSchema[AgentJobPayload](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID       string   `json:"job_id"`
			WaitSeconds *float64 `json:"wait_seconds"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		wait := DefaultPollWait
		if a.WaitSeconds != nil {
			wait = time.Duration(*a.WaitSeconds * float64(time.Second))
		}
		id := strings.TrimSpace(a.JobID)
		answered, refused := applyHostAnswer(ctx, o, req, id)
		if refused != nil {
			return refused, nil
		}
		// A job already waiting for a person: its host's user is asked at
		// once, not after the wait (a request just answered is not asked
		// again while the job takes the answer in).
		ask := func(s jobs.Snapshot) *mcp.CallToolResult {
			if s.Approval != nil && s.Approval.ID == answered {
				return nil
			}
			return hostQuestion(ctx, o, s)
		}
		if o.Host != nil && hostMayAsk(ctx) {
			if now, err := j.Wait(ctx, id, 0, nil); err == nil {
				if q := ask(now); q != nil {
					return q, nil
				}
			}
		}
		p := newProgress(ctx, req, o)
		defer p.stop()
		wctx, onChange, cancel := untilChange(ctx, p.report)
		defer cancel()
		snap, err := j.Wait(wctx, id, wait, onChange)
		if err != nil {
			return lookupError(err), nil
		}
		if q := ask(snap); q != nil {
			return q, nil
		}
		return agentResult(ctx, o, snap), nil
	}
	return tool, handler
}

func lookupError(err error) *mcp.CallToolResult {
	if errors.Is(err, jobs.ErrUnknownJob) {
		return mcp.NewToolResultError(err.Error() + ". Check the job_id; finished jobs stay pollable only for BRIDGE_RESULT_TTL_MS after they end.")
	}
	return mcp.NewToolResultError(err.Error())
}

package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// reviewArgs are deepseek_review's arguments.
type reviewArgs struct {
	Workspace                  string  `json:"workspace"`
	Scope                      string  `json:"scope"`
	Focus                      string  `json:"focus"`
	Instructions               string  `json:"instructions"`
	IncludeProjectInstructions bool    `json:"include_project_instructions"`
	Model                      string  `json:"model"`
	Thinking                   string  `json:"thinking"`
	MaxSteps                   int     `json:"max_steps"`
	TimeoutSeconds             float64 `json:"timeout_seconds"`
}

// ReviewTool is deepseek_review: a review job under a fixed read-only
// policy over a scope the bridge computes, whose answer's findings come
// back checked against that scope.
func ReviewTool(j AgentJobs, o AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	o = o.withDefaults()
	tool := mcp.NewTool("deepseek_review",
		mcp.WithDescription(fmt.Sprintf("An independent, read-only DeepSeek review of a workspace: the bridge computes the scope's diff and hands it to an agent that only reads and searches files. "+
			"Returns structuredContent.review: a verdict and findings (title, body, priority 0-3, confidence, file, lines), those outside the scope dropped and counted. Blocks up to %d s; then poll its job_id.", int(o.SyncWindow/time.Second))),
		mcp.WithTitleAnnotation("Review code with DeepSeek"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("workspace", mcp.Required(), mcp.Description("absolute path of the directory to review, inside the owner's allowed roots (DEEPSEEK_ALLOWED_ROOTS)")),
		mcp.WithString("scope", mcp.MaxLength(8<<10), mcp.Description(`what to review: "uncommitted" (default: the work tree against HEAD, untracked files included), "base:<ref>" (HEAD's commits since its merge base with ref), "commit:<sha>", or "paths:<a>,<b>" (files in full, relative to the workspace)`)),
		mcp.WithString("focus", mcp.MaxLength(review.MaxFocusBytes), mcp.Description("what to look at hardest, e.g. security, performance, error handling")),
		mcp.WithString("instructions", mcp.MaxLength(review.MaxInstructionBytes), mcp.Description("extra words for the reviewer")),
		mcp.WithBoolean("include_project_instructions", mcp.Description("hand the reviewer the workspace's CLAUDE.md and AGENTS.md (default false)")),
		modelArg(o.Models), thinkingArg(), stepsArg(o, "review"), timeoutArg(o, "review"),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentJobPayload](),
		TaskSupport,
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a reviewArgs
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		if a.Scope == "" {
			a.Scope = changes.ScopeUncommitted
		}
		spec, err := changes.ParseScope(a.Scope)
		if err != nil {
			return reviewError(err), nil
		}
		model, thinking, err := o.Models.Resolve(a.Model, a.Thinking)
		if err != nil {
			return reviewError(err), nil
		}
		snap, err := j.Start(ctx, jobs.StartRequest{Workspace: a.Workspace,
			MaxSteps: a.MaxSteps, Timeout: time.Duration(a.TimeoutSeconds * float64(time.Second)),
			Model: model.ID, Thinking: thinking,
			Review: &jobs.ReviewRequest{Request: review.Request{Scope: spec, Focus: a.Focus, Instructions: a.Instructions},
				IncludeProjectInstructions: a.IncludeProjectInstructions}})
		if err != nil {
			return reviewError(err), nil
		}
		return waitInline(ctx, req, j, o, snap), nil
	}
	return tool, handler
}

func reviewError(err error) *mcp.CallToolResult {
	return mcp.NewToolResultError("The review was not started: " + err.Error())
}

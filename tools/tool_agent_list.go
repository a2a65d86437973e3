package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentLister is what deepseek_agent_list needs of the registry: every job
// it holds, oldest first.
type AgentLister interface {
	List() []jobs.Snapshot
}

var _ AgentLister = (*jobs.Registry)(nil)

// Limits of deepseek_agent_list.
const (
	defaultListLimit = 20
	maxListLimit     = 100
	listTaskChars    = 200 // a task is shown this long at most
)

// agentStatuses are the statuses a job can have, for the status filter.
var agentStatuses = []string{
	string(jobs.StatusQueued), string(jobs.StatusRunning), string(jobs.StatusWaitingApproval),
	string(jobs.StatusDone), string(jobs.StatusDoneUnverified), string(jobs.StatusError), string(jobs.StatusCancelled), string(jobs.StatusInterrupted),
}

// AgentListOutput is deepseek_agent_list's structuredContent.
type AgentListOutput struct {
	Jobs  []AgentListEntry `json:"jobs" jsonschema:"the jobs, newest first"`
	Total int              `json:"total" jsonschema:"how many jobs match, before the limit"`
}

// AgentListEntry is one job of the list: enough to pick it, not its result
// (deepseek_agent_poll gives that, with the nonce).
type AgentListEntry struct {
	JobID     string  `json:"job_id" jsonschema:"pass it to deepseek_agent_poll or deepseek_agent_cancel"`
	Status    string  `json:"status" jsonschema:"queued, running, waiting_approval, done, done_unverified (done, but the record of its changes is incomplete: the workspace needs a review), error, cancelled or interrupted"`
	Task      string  `json:"task" jsonschema:"the task as given, cut to 200 characters"`
	Workspace string  `json:"workspace" jsonschema:"the job's workspace"`
	Model     string  `json:"model,omitempty" jsonschema:"the model the job runs"`
	Steps     int     `json:"steps" jsonschema:"tool calls so far"`
	ElapsedMS int64   `json:"elapsed_ms" jsonschema:"milliseconds from its acceptance to its end, or to now while it is live"`
	CostUSD   float64 `json:"cost_usd" jsonschema:"its usage so far at DeepSeek prices, in US dollars"`
	CreatedAt string  `json:"created_at" jsonschema:"when the job was accepted (RFC 3339, UTC)"`
	// Sessions: what this job continues, what continues it, whether it can be.
	Parent      string   `json:"parent,omitempty" jsonschema:"the job this one continues"`
	Children    []string `json:"children,omitempty" jsonschema:"the jobs that continue this one, oldest first"`
	CanContinue bool     `json:"can_continue" jsonschema:"deepseek_agent_continue can resume its conversation (it ended and began one)"`
}

// AgentListTool is deepseek_agent_list: the daemon's jobs, whoever started
// them (another host session, another host), newest first. Read-only: no
// result or nonce — poll a job for those.
func AgentListTool(l AgentLister) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	tool := mcp.NewTool("deepseek_agent_list",
		mcp.WithDescription("List the bridge's agent jobs, newest first, whichever session or host started them: "+
			"status, task, workspace, model, steps, time, cost, the jobs it continues or that continue it, and whether it can be continued. For a job's result and nonce, pass its job_id to deepseek_agent_poll."),
		mcp.WithTitleAnnotation("List DeepSeek agent jobs"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("status", mcp.Enum(agentStatuses...), mcp.Description("only jobs with this status; all when absent")),
		mcp.WithInteger("limit", mcp.Min(1), mcp.Max(maxListLimit), mcp.DefaultNumber(defaultListLimit),
			mcp.Description(fmt.Sprintf("at most this many jobs, 1 to %d (default %d)", maxListLimit, defaultListLimit))),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[AgentListOutput](),
	)
	handler := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Status string `json:"status"`
			Limit  int    `json:"limit"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		status, limit := a.Status, a.Limit
		if limit == 0 {
			limit = defaultListLimit
		}
		all := l.List()
		now := time.Now()
		children := map[string][]string{} // oldest first, as List gives them
		for _, s := range all {
			if s.Parent != "" {
				children[s.Parent] = append(children[s.Parent], s.ID)
			}
		}
		out := AgentListOutput{Jobs: []AgentListEntry{}}
		var text strings.Builder
		for i := len(all) - 1; i >= 0; i-- {
			s := all[i]
			if status != "" && string(s.Status) != status {
				continue
			}
			out.Total++
			if len(out.Jobs) >= limit {
				continue
			}
			e := AgentListEntry{JobID: s.ID, Status: string(s.Status), Task: cut(s.Task, listTaskChars),
				Workspace: s.Workspace, Model: s.Model, Steps: s.Steps, ElapsedMS: s.Elapsed(now).Milliseconds(), CostUSD: s.CostUSD,
				CreatedAt: s.CreatedAt.UTC().Format(time.RFC3339),
				Parent:    s.Parent, Children: children[s.ID], CanContinue: s.CanContinue()}
			out.Jobs = append(out.Jobs, e)
			fmt.Fprintf(&text, "%s  %-16s %3d steps %7s $%.4f  %s%s\n", e.JobID, e.Status, e.Steps,
				s.Elapsed(now).Round(time.Second), e.CostUSD, cut(e.Task, 80), sessionNote(e))
		}
		if out.Total == 0 {
			text.WriteString("no agent jobs")
			if status != "" {
				text.WriteString(" with status " + status)
			}
			text.WriteString("\n")
		} else if out.Total > len(out.Jobs) {
			fmt.Fprintf(&text, "(%d more: raise limit)\n", out.Total-len(out.Jobs))
		}
		return mcp.NewToolResultStructured(out, strings.TrimRight(text.String(), "\n")), nil
	}
	return tool, handler
}

// sessionNote is an entry's place among continued jobs, for the text.
func sessionNote(e AgentListEntry) string {
	var parts []string
	if e.Parent != "" {
		parts = append(parts, "continues "+e.Parent)
	}
	if len(e.Children) > 0 {
		parts = append(parts, "continued by "+strings.Join(e.Children, ", "))
	}
	if e.CanContinue {
		parts = append(parts, "can be continued")
	}
	if len(parts) == 0 {
		return ""
	}
	return "  (" + strings.Join(parts, "; ") + ")"
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

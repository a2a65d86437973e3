package tools

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentFetcher is the registry's side deepseek_agent_fetch needs.
type AgentFetcher interface {
	Part(id, part string) ([]byte, error)
}

var _ AgentFetcher = (*jobs.Registry)(nil)

// Pages of deepseek_agent_fetch.
const (
	defaultPage = 8 << 10
	maxPage     = 64 << 10
)

// FetchOutput is deepseek_agent_fetch's structuredContent.
type FetchOutput struct {
	JobID      string `json:"job_id" jsonschema:"the job"`
	Part       string `json:"part" jsonschema:"the part"`
	Offset     int    `json:"offset" jsonschema:"the byte offset this page starts at"`
	Total      int    `json:"total" jsonschema:"the part's size in bytes"`
	NextOffset int    `json:"next_offset,omitempty" jsonschema:"pass it as offset for the next page; absent on the last page"`
	Text       string `json:"text" jsonschema:"the page: bytes offset to next_offset of the part (JSON parts are one object a line)"`
}

// AgentFetchTool is deepseek_agent_fetch: a part of a job, a page at a
// time, for what a payload left out to fit its host.
func AgentFetchTool(f AgentFetcher) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	tool := mcp.NewTool("deepseek_agent_fetch",
		mcp.WithDescription("Read a part of an agent or review job a page at a time: what a payload's omitted lists (the whole diff, the result, changes, ledger, commands, trace). Read-only."),
		mcp.WithTitleAnnotation("Fetch part of a DeepSeek job"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithString("job_id", mcp.Required(), mcp.MaxLength(64), mcp.Description("the job")),
		mcp.WithString("part", mcp.Required(), mcp.Enum(jobs.Parts...), mcp.Description("which part")),
		mcp.WithInteger("offset", mcp.Min(0), mcp.Max(1<<30), mcp.Description("byte offset (default 0; next_offset of the page before)")),
		mcp.WithInteger("limit", mcp.Min(1), mcp.Max(maxPage), mcp.Description(fmt.Sprintf("page size in bytes (default %d)", defaultPage))),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[FetchOutput](),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			JobID  string `json:"job_id"`
			Part   string `json:"part"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		b, err := f.Part(a.JobID, a.Part)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		out, err := page(b, a.Offset, a.Limit)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		out.JobID, out.Part = a.JobID, a.Part
		text := fmt.Sprintf("%s of job %s, bytes %d to %d of %d", a.Part, a.JobID, out.Offset, out.Offset+len(out.Text), out.Total)
		if out.NextOffset > 0 {
			text += fmt.Sprintf("; the next page starts at offset %d", out.NextOffset)
		} else {
			text += "; this is the last page"
		}
		return mcp.NewToolResultStructured(out, text+":\n"+out.Text), nil
	}
	return tool, handler
}

// page is b[offset:] cut to at most limit bytes at a rune's start, so that
// the pages, joined, are b byte for byte.
func page(b []byte, offset, limit int) (FetchOutput, error) {
	if limit <= 0 {
		limit = defaultPage
	}
	if offset > len(b) {
		return FetchOutput{}, fmt.Errorf("offset %d is past the part's end (%d bytes)", offset, len(b))
	}
	if offset < len(b) && !utf8.RuneStart(b[offset]) {
		return FetchOutput{}, fmt.Errorf("offset %d is inside a character: pass the next_offset a page gave", offset)
	}
	end := min(len(b), offset+limit)
	for end < len(b) && end > offset && !utf8.RuneStart(b[end]) {
		end--
	}
	out := FetchOutput{Offset: offset, Total: len(b), Text: string(b[offset:end])}
	if end < len(b) {
		out.NextOffset = end
	}
	return out, nil
}

package tools

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// JobPartTemplate is the URI of a part of a job, as an MCP resource: what
// deepseek_agent_fetch returns, for hosts that read resources.
const JobPartTemplate = "job://{job_id}/{part}{?offset,limit}"

// JobResources are the parts of jobs as MCP resources: job://ID/diff,
// job://ID/result, job://ID/ledger…, a page at a time (offset and limit in
// the query, as deepseek_agent_fetch takes them; each page's _meta says
// where the next begins).
func JobResources(f AgentFetcher) []mcpserver.ServerResourceTemplate {
	t := mcp.NewResourceTemplate(JobPartTemplate, "DeepSeek job part",
		mcp.WithTemplateDescription("a part of an agent or review job, a page at a time: diff, result, changes, ledger, commands or trace (the JSON parts one object a line); offset and limit in bytes"),
		mcp.WithTemplateMIMEType("text/plain"))
	h := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		arg := func(k string) string {
			switch v := req.Params.Arguments[k].(type) {
			case string:
				return v
			case []string:
				if len(v) > 0 {
					return v[0]
				}
			}
			return ""
		}
		num := func(k string) (int, error) {
			s := arg(k)
			if s == "" {
				return 0, nil
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s %q is not a whole number of bytes", k, s)
			}
			return n, nil
		}
		offset, err := num("offset")
		if err != nil {
			return nil, err
		}
		limit, err := num("limit")
		if err != nil {
			return nil, err
		}
		b, err := f.Part(arg("job_id"), arg("part"))
		if err != nil {
			return nil, err
		}
		out, err := page(b, offset, min(limit, maxPage))
		if err != nil {
			return nil, err
		}
		meta := map[string]any{"offset": out.Offset, "total": out.Total}
		if out.NextOffset > 0 {
			meta["next_offset"] = out.NextOffset
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: out.Text, Meta: meta}}, nil
	}
	return []mcpserver.ServerResourceTemplate{{Template: t, Handler: h}}
}

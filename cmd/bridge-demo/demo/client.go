package demo

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// connect opens an MCP client to url at the newest protocol revision both
// sides speak, and hands every progress notification to onProgress.
func connect(ctx context.Context, url string, onProgress func(mcp.ProgressNotificationParams)) (*client.Client, *mcp.InitializeResult, error) {
	// No standalone GET stream: progress arrives on each call's own stream.
	// No transport log: what goes wrong comes back as an error.
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, nil, err
	}
	c := client.NewClient(tr)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		var p mcp.ProgressNotificationParams
		if b, err := json.Marshal(n.Params); err == nil && json.Unmarshal(b, &p) == nil {
			onProgress(p)
		}
	})
	if err := c.Start(ctx); err != nil {
		return nil, nil, err
	}
	ir, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "bridge-demo", Version: "1"},
	}})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, ir, nil
}

// callTool calls the tool name with args; a non-empty progressToken asks
// for progress notifications.
func callTool(ctx context.Context, c *client.Client, name string, args map[string]any, progressToken string) (*mcp.CallToolResult, error) {
	params := mcp.CallToolParams{Name: name, Arguments: args}
	if progressToken != "" {
		params.Meta = &mcp.Meta{ProgressToken: progressToken}
	}
	return c.CallTool(ctx, mcp.CallToolRequest{Params: params})
}

// resultText joins the text content blocks of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

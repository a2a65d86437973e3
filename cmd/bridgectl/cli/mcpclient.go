package cli

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectMCP opens an MCP session to endpoint (a full /mcp/<secret> URL) with
// the official Go SDK. The caller closes the session.
func connectMCP(ctx context.Context, e *Env, endpoint string) (*mcp.ClientSession, error) {
	// No overall client timeout: a tool call may stream for minutes; ctx bounds it.
	hc := &http.Client{Transport: e.HTTP.Transport}
	client := mcp.NewClient(&mcp.Implementation{Name: "bridgectl", Version: Version}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           hc,
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// resultText joins a tool result's text blocks.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

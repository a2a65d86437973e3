package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// protocolVersion is the MCP revision bridgectl asks for: the last one with
// the initialize handshake, which smoke reports on.
const protocolVersion = "2025-11-25"

// connectMCP opens an MCP client to endpoint (a full /mcp/<secret> URL) with
// mcp-go, the SDK the daemon serves with, and returns the server's answer to
// initialize. The caller closes the client.
func connectMCP(ctx context.Context, e *Env, endpoint string) (*client.Client, *mcp.InitializeResult, error) {
	// No overall client timeout: a tool call may stream for minutes; ctx bounds it.
	st := &statusTransport{rt: e.HTTP.Transport}
	hc := &http.Client{Transport: st}
	// No standalone GET stream (bridgectl reads only the answers to its own
	// requests) and no transport log: what goes wrong comes back as an error.
	tr, err := transport.NewStreamableHTTP(endpoint, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(protocolVersion))
	if err := c.Start(ctx); err != nil {
		return nil, nil, err
	}
	ir, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocolVersion,
		ClientInfo:      mcp.Implementation{Name: "bridgectl", Version: Version},
	}})
	if err != nil {
		c.Close()
		if code := int(st.last.Load()); errors.Is(err, transport.ErrLegacySSEServer) && code >= 400 {
			// mcp-go takes any 4xx to initialize for an old SSE server; here
			// it means a wrong secret or path, so say what the server answered.
			err = fmt.Errorf("calling \"initialize\": %s", http.StatusText(code))
		}
		return nil, nil, err
	}
	return c, ir, nil
}

// statusTransport remembers the status code of the last response.
type statusTransport struct {
	rt   http.RoundTripper // nil: http.DefaultTransport
	last atomic.Int32
}

func (t *statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := t.rt
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(r)
	if err == nil {
		t.last.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// callTool calls the tool name with args.
func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

// resultText joins a tool result's text blocks.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

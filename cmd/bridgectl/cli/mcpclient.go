package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
		return nil, nil, callError(ctx, "initialize", err)
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
			return nil, nil, fmt.Errorf("calling \"initialize\": %s", http.StatusText(code))
		}
		return nil, nil, callError(ctx, "initialize", err)
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
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	return res, callError(ctx, "tools/call", err)
}

// callToolWatched is callTool asking for progress: each progress message of
// this call that watch is given (a retry, a job's state) arrives while the
// call runs, on mcp-go's goroutine; none arrives after it returns.
func callToolWatched(ctx context.Context, c *client.Client, name string, args map[string]any, watch func(msg string)) (*mcp.CallToolResult, error) {
	token := "bridgectl-" + randomWord()
	var mu sync.Mutex
	done := false
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" || fmt.Sprint(n.Params.AdditionalFields["progressToken"]) != token {
			return
		}
		msg, _ := n.Params.AdditionalFields["message"].(string)
		mu.Lock()
		defer mu.Unlock()
		if !done && msg != "" {
			watch(msg)
		}
	})
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args, Meta: &mcp.Meta{ProgressToken: token}}})
	mu.Lock()
	done = true
	mu.Unlock()
	return res, callError(ctx, "tools/call", err)
}

// listTools asks for the server's tools.
func listTools(ctx context.Context, c *client.Client) (*mcp.ListToolsResult, error) {
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	return res, callError(ctx, "tools/list", err)
}

// rpcSentinels are the errors mcp-go puts in front of a JSON-RPC error's
// message; the owner reads the server's message alone.
var rpcSentinels = []error{
	mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound, mcp.ErrInvalidParams,
	mcp.ErrInternalError, mcp.ErrRequestInterrupted, mcp.ErrResourceNotFound,
}

// callError words a failed MCP request the one way bridgectl reports it:
// the context's own error when it ended the call (a timeout, Ctrl-C), else
// `calling "METHOD": WHAT`, where WHAT is the server's JSON-RPC message or
// the network error, without mcp-go's layers of "transport error: failed to
// send request:".
func callError(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	what := err.Error()
	var terr *transport.Error
	var uerr *url.Error
	switch {
	case errors.As(err, &uerr):
		what = uerr.Error()
	case errors.As(err, &terr) && strings.Contains(terr.Err.Error(), "unexpected nil response"):
		what = "request terminated without response"
	case errors.As(err, &terr):
		what = terr.Err.Error()
	default:
		for _, s := range rpcSentinels {
			if errors.Is(err, s) {
				what = strings.TrimPrefix(what, s.Error()+": ")
				break
			}
		}
	}
	return fmt.Errorf("calling %q: %s", method, oneLine(what, 300)) // a proxy's 5xx page can be long
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

package cli

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// TestMCPClientErrors: what bridgectl prints when an MCP request fails is
// the context's error, the server's message or the network error, each
// behind `calling "METHOD":`, never mcp-go's wrapping layers.
func TestMCPClientErrors(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := mcpserver.NewMCPServer("fake", "v0")
	s.AddTool(mcp.NewTool("fails"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("fails: the upstream is down")
	})
	s.AddTool(mcp.NewTool("hangs"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return mcp.NewToolResultText("late"), nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStateLess(true)))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	e := &Env{HTTP: &http.Client{}}

	c, ir, err := connectMCP(t.Context(), e, ts.URL+"/mcp")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if ir.ServerInfo.Name != "fake" {
		t.Fatalf("initialize answered %+v", ir.ServerInfo)
	}

	_, err = callTool(t.Context(), c, "fails", nil)
	if err == nil || err.Error() != `calling "tools/call": fails: the upstream is down` {
		t.Errorf("a tool's JSON-RPC error reads %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = callTool(ctx, c, "hangs", nil)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "context deadline exceeded" {
		t.Errorf("a call past its deadline reads %v", err)
	}

	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	_, _, err = connectMCP(t.Context(), e, down)
	if err == nil || !strings.HasPrefix(err.Error(), `calling "initialize": Post "`+down+`"`) ||
		!strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "transport error") {
		t.Errorf("a daemon that is down reads %v", err)
	}

	// A wrong path answers 404 (as a wrong secret does): the status, not
	// mcp-go's guess of an old SSE server.
	_, _, err = connectMCP(t.Context(), e, ts.URL+"/nope")
	if err == nil || err.Error() != `calling "initialize": Not Found` {
		t.Errorf("a path that answers 404 reads %v", err)
	}
}

package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// gatedFlash blocks each call until its release is closed or its ctx ends,
// and reports on entered and cancelled (all keyed by task).
type gatedFlash struct {
	release, entered, cancelled map[string]chan struct{}
}

func newGatedFlash(tasks ...string) *gatedFlash {
	g := &gatedFlash{release: map[string]chan struct{}{}, entered: map[string]chan struct{}{}, cancelled: map[string]chan struct{}{}}
	for _, task := range tasks {
		g.release[task] = make(chan struct{})
		g.entered[task] = make(chan struct{})
		g.cancelled[task] = make(chan struct{})
	}
	return g
}

func (g *gatedFlash) client() *fakeFlash {
	return &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		close(g.entered[req.Task]) // the maps are only read once built
		select {
		case <-g.release[req.Task]:
			return deepseek.FlashResult{Answer: "answer for " + req.Task, Model: "deepseek-flash", FinishReason: "stop"}, nil
		case <-ctx.Done():
			close(g.cancelled[req.Task])
			return deepseek.FlashResult{}, deepseek.ErrCanceled
		}
	}}
}

// clientCall is one tools/call over its own connection (its own client).
type clientCall struct {
	cancel context.CancelFunc
	done   chan struct{}
	resp   response
	err    error
}

func startClientCall(t *testing.T, url, body string) *clientCall {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	c := &clientCall{cancel: cancel, done: make(chan struct{})}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	go func() { // joined by wait (and by the cleanup below)
		defer close(c.done)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			c.err = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		c.resp, c.err = response{resp.StatusCode, resp.Header, b}, err
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func (c *clientCall) wait(t *testing.T) response {
	t.Helper()
	waitFor(t, c.done, 10*time.Second, "the call's answer")
	if c.err != nil {
		t.Fatalf("call: %v", c.err)
	}
	return c.resp
}

// TestCancelFromAnotherClientIsIgnored: two clients both have a call with id
// 7 in flight; B's notifications/cancelled for 7 must not touch A's call
// (mcp-go keys stateless in-flight calls by id alone). A closing its own
// connection still cancels A.
func TestCancelFromAnotherClientIsIgnored(t *testing.T) {
	g := newGatedFlash("A", "B", "A2")
	env := newTestEnv(t, Options{Flash: g.client()})

	// B first, then A: in mcp-go's map the entry for id 7 is A's.
	b := startClientCall(t, env.url, callBody(7, "deepseek_flash", map[string]any{"task": "B"}, nil))
	waitFor(t, g.entered["B"], 10*time.Second, "B's call")
	a := startClientCall(t, env.url, callBody(7, "deepseek_flash", map[string]any{"task": "A"}, nil))
	waitFor(t, g.entered["A"], 10*time.Second, "A's call")

	r := post(t, env.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"B gave up"}}`, mcpHeaders)
	if r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Fatalf("cancel: %d %q, want 202 and no body", r.status, r.body)
	}
	close(g.release["A"])
	close(g.release["B"])
	for name, c := range map[string]*clientCall{"A": a, "B": b} {
		resp := c.wait(t)
		res := finalResult(t, messages(t, resp))
		if resp.status != 200 || res.IsError || !strings.HasPrefix(res.text(), "answer for "+name) {
			t.Errorf("%s: %d %+v, want its own answer", name, resp.status, res)
		}
	}
	for _, name := range []string{"A", "B"} {
		select {
		case <-g.cancelled[name]:
			t.Errorf("%s's call was cancelled", name)
		default:
		}
	}

	// A client that closes its connection cancels its own call.
	a2 := startClientCall(t, env.url, callBody(7, "deepseek_flash", map[string]any{"task": "A2"}, nil))
	waitFor(t, g.entered["A2"], 10*time.Second, "A2's call")
	a2.cancel()
	waitFor(t, g.cancelled["A2"], 10*time.Second, "A2's call to see its connection close")
}

func TestBatchesAreRefusedAfterCounting(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := newTestEnv(t, Options{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	env.srv.limiter = newCallLimiter(3, env.srv.o.Now)
	call := func(id int) string { return callBody(id, "deepseek_flash", map[string]any{"task": "x"}, nil) }
	type rpcErr struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	tests := []struct {
		name, body string
		status     int
		code       int
		text       string
	}{
		{"batch of two calls", "[" + call(1) + "," + call(2) + "]", 400, -32600, "JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per request"},
		{"batch without calls", "[" + listBody(3) + "]", 400, -32600, "batches are not supported"},
		{"batch with a cancel", `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}]`, 400, -32600, "batches are not supported"},
		// The two calls above took two of the three tokens.
		{"batch over what is left", "[" + call(4) + "," + call(5) + "]", 429, -32000, "rate limit exceeded"},
		{"single call takes the last token", call(6), 200, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, env.url, tt.body, mcpHeaders)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %q", r.status, tt.status, r.body)
			}
			if tt.code == 0 {
				if res := finalResult(t, messages(t, r)); res.IsError {
					t.Fatalf("result %+v", res)
				}
				return
			}
			var e rpcErr
			if err := json.Unmarshal(r.body, &e); err != nil || e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Code != tt.code || !strings.Contains(e.Error.Message, tt.text) {
				t.Fatalf("body %q, want JSON-RPC error %d with %q", r.body, tt.code, tt.text)
			}
		})
	}
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
)

// Obviously fake credentials.
const (
	testSecret = "test-secret-0123456789abcdef"
	testKey    = "sk-test-double-key"
)

// fakeFlash is a FlashClient whose behaviour the test sets.
type fakeFlash struct {
	fn func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error)
}

func (f *fakeFlash) Flash(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
	if f.fn == nil {
		return deepseek.FlashResult{Answer: "fake answer to: " + req.Task, Model: "deepseek-flash", FinishReason: "stop"}, nil
	}
	return f.fn(ctx, req)
}

func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.LoadFrom("", envMap(map[string]string{
		"MCP_PATH_SECRET":  testSecret,
		"DEEPSEEK_API_KEY": testKey,
		"BRIDGE_STATE_DIR": t.TempDir(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func envMap(m map[string]string) config.Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

type testEnv struct {
	srv  *Server
	http *httptest.Server
	logs *syncbuf.Buffer
	url  string // the MCP endpoint with the secret
}

// newTestEnv serves the full router on a loopback httptest server. The logger
// writes unredacted debug lines into logs, so a leak by the server itself shows.
func newTestEnv(t *testing.T, o Options) *testEnv {
	t.Helper()
	if o.Config.PathSecret == "" {
		o.Config = testConfig(t)
	}
	if o.Flash == nil {
		o.Flash = &fakeFlash{}
	}
	logs := &syncbuf.Buffer{}
	o.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &testEnv{srv: s, http: hs, logs: logs, url: hs.URL + "/mcp/" + o.Config.PathSecret}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t testing.TB, method, url string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, strings.ReplaceAll(url, testSecret, "<secret>"), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func post(t testing.TB, url, body string, header map[string]string) response {
	t.Helper()
	return do(t, http.MethodPost, url, strings.NewReader(body), header)
}

// rpcMessage is one JSON-RPC message of a response.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// messages parses a JSON or SSE body into its JSON-RPC messages.
func messages(t testing.TB, r response) []rpcMessage {
	t.Helper()
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		var m rpcMessage
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", r.body)
		}
		return []rpcMessage{m}
	}
	var out []rpcMessage
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m rpcMessage
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", data, err)
			}
			out = append(out, m)
		}
	}
	return out
}

func initializeBody(id int) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "server-test", "version": "1"},
	}})
	return string(b)
}

func listBody(id int) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/list","params":{}}`
}

func callBody(id int, name string, args map[string]any, token any) string {
	params := map[string]any{"name": name, "arguments": args}
	if token != nil {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	return string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// mcpHeaders are what a 2025-11-25 client sends after initialize.
var mcpHeaders = map[string]string{"MCP-Protocol-Version": "2025-11-25"}

// toolResult decodes the result of the final message.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func finalResult(t *testing.T, msgs []rpcMessage) toolResult {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatal("no messages")
	}
	last := msgs[len(msgs)-1]
	if last.Error != nil {
		t.Fatalf("JSON-RPC error %d: %s", last.Error.Code, last.Error.Message)
	}
	var r toolResult
	if err := json.Unmarshal(last.Result, &r); err != nil {
		t.Fatalf("result %s: %v", last.Result, err)
	}
	return r
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// waitFor fails the test if ch is not closed within d (a guard against hangs, not a sleep).
func waitFor(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
}

package modelproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const (
	testKey   = "sk-test-double-key"
	testModel = "deepseek-flash"
	msgBody   = `{"model":"deepseek-flash","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
)

// upstreamReq is what the fake upstream received.
type upstreamReq struct {
	Path, Query string
	Header      http.Header
	Body        []byte
}

// fakeUpstream is a small scripted Anthropic endpoint: each request takes the
// next handler of the script; when it is empty, fallback answers.
type fakeUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []upstreamReq
	script   []http.HandlerFunc
	fallback http.HandlerFunc
}

func newUpstream(t *testing.T, script ...http.HandlerFunc) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{script: script, fallback: sseTurn(usageBlock{Input: 1, Output: 1}, 1, "fallback")}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, upstreamReq{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		h := u.fallback
		if len(u.script) > 0 {
			h, u.script = u.script[0], u.script[1:]
		}
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) requests() []upstreamReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamReq(nil), u.reqs...)
}

// usageBlock is the usage a scripted turn announces.
type usageBlock struct {
	Input, Output, CacheRead, CacheCreation int64
}

func (b usageBlock) json() map[string]int64 {
	return map[string]int64{
		"input_tokens": b.Input, "output_tokens": b.Output,
		"cache_read_input_tokens": b.CacheRead, "cache_creation_input_tokens": b.CacheCreation,
	}
}

type sseEvent struct {
	name string
	data any
}

func writeEvent(w http.ResponseWriter, e sseEvent) {
	b, _ := json.Marshal(e.data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b)
	w.(http.Flusher).Flush()
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// turnEvents is a whole Anthropic stream: message_start carries start (with
// output_tokens 1, as Anthropic does), message_delta the cumulative output.
func turnEvents(start usageBlock, finalOutput int64, text string) []sseEvent {
	su := start.json()
	return []sseEvent{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": testModel,
			"content": []any{}, "stop_reason": nil, "usage": su}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}},
		{"ping", map[string]any{"type": "ping"}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": finalOutput}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
}

func sseTurn(start usageBlock, finalOutput int64, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		for _, e := range turnEvents(start, finalOutput, text) {
			writeEvent(w, e)
		}
	}
}

func jsonTurn(u usageBlock, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": testModel,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "usage": u.json(),
		})
	}
}

func statusTurn(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// startProxy builds and starts a proxy on 127.0.0.1:0 against up.
func startProxy(t *testing.T, up *fakeUpstream, o Options) *Proxy {
	t.Helper()
	o.Upstream = up.URL + "/anthropic"
	if o.APIKey == "" {
		o.APIKey = testKey
	}
	if o.Model == "" {
		o.Model = testModel
	}
	p, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Listen(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { p.Shutdown(t.Context()) })
	return p
}

// open hands out a token for jobID.
func open(t *testing.T, p *Proxy, jobID string) string {
	t.Helper()
	base, token, err := p.Open(jobID)
	if err != nil {
		t.Fatalf("Open(%s): %v", jobID, err)
	}
	if base != p.URL() {
		t.Fatalf("Open base URL = %q, want %q", base, p.URL())
	}
	return token
}

type answer struct {
	status int
	header http.Header
	body   string
}

// call posts body to the proxy with token as a bearer (or x-api-key when
// header is "x-api-key").
func call(t *testing.T, p *Proxy, path, header, token, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	switch {
	case token == "":
	case header == "x-api-key":
		req.Header.Set("x-api-key", token)
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// anthropicError decodes an Anthropic error body, failing on any other shape.
func anthropicError(t *testing.T, body string) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an Anthropic error body: %q", body)
	}
	return e.Error.Type, e.Error.Message
}

// faults records OnJobFault calls.
type faults struct {
	mu    sync.Mutex
	calls []string // "jobID: reason"
	ch    chan string
}

func newFaults() *faults { return &faults{ch: make(chan string, 16)} }

func (f *faults) record(jobID string, fault Fault) {
	reason := fault.Reason
	f.mu.Lock()
	f.calls = append(f.calls, jobID+": "+reason)
	f.mu.Unlock()
	f.ch <- jobID + ": " + reason
}

func (f *faults) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// stalledStream is an upstream turn that sends message_start with input
// tokens and then never finishes on its own.
func stalledStream(input int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeEvent(w, turnEvents(usageBlock{Input: input, Output: 1}, 0, "")[0])
		<-r.Context().Done()
	}
}

// openStream posts a streamed call with token and returns its body once the
// first event line has arrived (the call is in flight).
func openStream(t *testing.T, p *Proxy, token string) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	return br
}

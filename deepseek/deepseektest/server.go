package deepseektest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultKey is the key a double accepts unless WithKey says otherwise.
const DefaultKey = "sk-test-double-key"

// DefaultText is the answer when a queue is empty.
const DefaultText = "deepseek double: no scripted turn left"

// SideText is the Anthropic side-request answer.
const SideText = "deepseek double: side request answered"

// maxBody bounds what the double reads of one request.
const maxBody = 32 << 20

// DefaultModels are the model ids the double accepts.
var DefaultModels = []string{"deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat", "deepseek-reasoner"}

// Option configures a Server.
type Option func(*Server)

// WithKey sets the accepted API key.
func WithKey(key string) Option { return func(s *Server) { s.key = key } }

// WithModels accepts more model ids.
func WithModels(ids ...string) Option {
	return func(s *Server) {
		for _, id := range ids {
			s.models[id] = true
		}
	}
}

// WithDefault sets the turn answered when a queue is empty (both sides).
func WithDefault(t Turn) Option { return func(s *Server) { s.defaultTurn = t } }

// WithSideTurn sets the answer to Anthropic side requests (requests without
// tools, see the package doc).
func WithSideTurn(t Turn) Option { return func(s *Server) { s.sideTurn = t } }

// WithSideRule replaces the rule that decides which Anthropic messages
// requests are side requests (default: a request without tools).
func WithSideRule(isSide func(Request) bool) Option { return func(s *Server) { s.isSide = isSide } }

// WithDelay adds d before every response (scripted, default and side turns).
func WithDelay(d time.Duration) Option { return func(s *Server) { s.delay = d } }

// WithRequestLog writes one JSON line per request to w: time, side, path,
// query, model, stream, tools, max_tokens, headers (key headers redacted).
func WithRequestLog(w io.Writer) Option { return func(s *Server) { s.reqLog = w } }

// Server is a running double. Safe for concurrent use.
type Server struct {
	key         string
	models      map[string]bool
	defaultTurn Turn
	sideTurn    Turn
	delay       time.Duration
	reqLog      io.Writer
	isSide      func(Request) bool

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup // handlers and the serve loop

	mu            sync.Mutex
	openaiQ       []Turn
	anthropicQ    []Turn
	openaiReqs    []Request
	anthropicReqs []Request
	reasonedCalls map[string]bool // tool call ids served together with reasoning
	nextID        int
}

// New starts a double on a fresh 127.0.0.1 port. It panics when it cannot
// listen (as httptest.NewServer does). Close it when done.
func New(opts ...Option) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("deepseektest: listen on loopback: %v", err))
	}
	return NewServer(ln, opts...)
}

// NewServer serves the double on ln, which it owns from now on.
func NewServer(ln net.Listener, opts ...Option) *Server {
	s := &Server{
		key:           DefaultKey,
		models:        map[string]bool{},
		defaultTurn:   Text(DefaultText),
		sideTurn:      Text(SideText),
		ln:            ln,
		done:          make(chan struct{}),
		reasonedCalls: map[string]bool{},
		isSide:        func(r Request) bool { return !r.HasTools() },
	}
	for _, id := range DefaultModels {
		s.models[id] = true
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /chat/completions", s.handleOpenAI)
	mux.HandleFunc("POST /anthropic/v1/messages", s.handleAnthropic)
	mux.HandleFunc("POST /anthropic/v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("GET /models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, deepseekError("Not Found: "+r.Method+" "+r.URL.Path, "invalid_request_error"))
	})
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.wg.Add(1)
			defer s.wg.Done()
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln) // returns when Close closes the listener
	}()
	return s
}

// URL is the base URL: the OpenAI side is URL()+"/chat/completions", the
// Anthropic side URL()+"/anthropic".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Key is the accepted API key.
func (s *Server) Key() string { return s.key }

// Close stops the double: delayed answers are abandoned, connections closed,
// and every handler has returned when Close returns.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		_ = s.srv.Close()
		s.wg.Wait()
	})
}

// Script appends turns to the OpenAI queue.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openaiQ = append(s.openaiQ, turns...)
}

// ScriptAnthropic appends turns to the Anthropic queue.
func (s *Server) ScriptAnthropic(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.anthropicQ = append(s.anthropicQ, turns...)
}

// LoadScript appends a JSON script (see ParseScript) to both queues.
func (s *Server) LoadScript(data []byte) error {
	o, a, err := ParseScript(data)
	if err != nil {
		return err
	}
	s.Script(o...)
	s.ScriptAnthropic(a...)
	return nil
}

// Pending is how many scripted turns are left in the OpenAI and Anthropic queues.
func (s *Server) Pending() (openai, anthropic int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.openaiQ), len(s.anthropicQ)
}

// Requests returns a copy of the recorded OpenAI-side requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.openaiReqs...)
}

// AnthropicRequests returns a copy of the recorded Anthropic-side requests
// (messages and count_tokens).
func (s *Server) AnthropicRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.anthropicReqs...)
}

// ScriptedAnthropicRequests are the Anthropic requests that consumed a scripted turn.
func (s *Server) ScriptedAnthropicRequests() []Request {
	var out []Request
	for _, r := range s.AnthropicRequests() {
		if r.Scripted {
			out = append(out, r)
		}
	}
	return out
}

// LastToolResultTexts is ToolResultTexts of the last recorded messages
// request of a side.
func (s *Server) LastToolResultTexts(side Side) []string {
	reqs := s.Requests()
	if side == SideAnthropic {
		reqs = s.AnthropicRequests()
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		if !strings.HasSuffix(reqs[i].Path, "/count_tokens") {
			return reqs[i].ToolResultTexts()
		}
	}
	return nil
}

// record reads and records a request; the returned index is its slot.
func (s *Server) record(side Side, r *http.Request) (Request, int, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	req := Request{
		Side: side, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Time: time.Now(),
	}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		req.JSON = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := 0
	if side == SideAnthropic {
		s.anthropicReqs = append(s.anthropicReqs, req)
		idx = len(s.anthropicReqs) - 1
	} else {
		s.openaiReqs = append(s.openaiReqs, req)
		idx = len(s.openaiReqs) - 1
	}
	if s.reqLog != nil {
		s.logRequestLocked(req)
	}
	if err == nil && len(body) > maxBody {
		err = errors.New("request body too large")
	}
	return req, idx, err
}

// take pops the next turn of a side (or a default) and marks the recorded
// request accordingly.
func (s *Server) take(side Side, idx int, sideRequest bool) Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.openaiQ
	reqs := s.openaiReqs
	if side == SideAnthropic {
		q, reqs = &s.anthropicQ, s.anthropicReqs
	}
	if sideRequest {
		reqs[idx].SideRequest = true
		return s.sideTurn
	}
	if len(*q) == 0 {
		return s.defaultTurn
	}
	t := (*q)[0]
	*q = (*q)[1:]
	reqs[idx].Scripted = true
	return t
}

// resolve runs a Func turn outside the lock.
func resolve(t Turn, r Request) Turn {
	if t.Func != nil {
		t = t.Func(r)
		t.Func = nil
	}
	return t
}

// admit records a messages request of a side and makes the checks both
// endpoints make, in DeepSeek's order: the key (401), the body size (413), the
// JSON (400), the model (400, modelOK decides) and a non-empty messages list
// (400). ok is false when it has answered the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, side Side, modelOK func(string) bool) (req Request, idx int, ok bool) {
	req, idx, err := s.record(side, r)
	if ok, msg := s.authorized(r, side); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return req, idx, false
	}
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, deepseekError(err.Error(), "invalid_request_error"))
		return req, idx, false
	}
	if req.JSON == nil {
		writeJSON(w, http.StatusBadRequest, deepseekError("Failed to deserialize the JSON body into the target type", "invalid_request_error"))
		return req, idx, false
	}
	if !modelOK(req.Model()) {
		writeJSON(w, http.StatusBadRequest, deepseekError("Model Not Exist", "invalid_request_error"))
		return req, idx, false
	}
	if len(req.Messages()) == 0 {
		writeJSON(w, http.StatusBadRequest, deepseekError("messages: must not be empty", "invalid_request_error"))
		return req, idx, false
	}
	return req, idx, true
}

// play resolves a taken turn, waits out its delay and answers its break or
// error. Otherwise it returns the turn and the model to answer with (the
// turn's, else the requested one); ok is false when it has answered the
// request or the request or the server ended during the delay.
func (s *Server) play(w http.ResponseWriter, r *http.Request, taken Turn, req Request) (t Turn, model string, ok bool) {
	t = resolve(taken, req)
	if !s.wait(r.Context(), s.delay+t.Delay) {
		return t, "", false
	}
	if t.Break == BreakReset {
		reset(w)
		return t, "", false
	}
	if t.isError() {
		writeErrorTurn(w, t)
		return t, "", false
	}
	model = t.Model
	if model == "" {
		model = req.Model()
	}
	return t, model, true
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s%06d", prefix, s.nextID)
}

// handleModels answers GET /models as DeepSeek does: the accepted model ids,
// sorted, as an OpenAI-style list (what `bridgectl doctor` uses to check a
// key). A wrong key gets the same 401 as the chat endpoint.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if ok, msg := s.authorized(r, SideOpenAI); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	ids := slices.Sorted(maps.Keys(s.models)) // fixed once the server runs
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, len(ids))}
	for i, id := range ids {
		list.Data[i] = model{ID: id, Object: "model", OwnedBy: "deepseek"}
	}
	writeJSON(w, http.StatusOK, list)
}

// authorized checks the key. Anthropic side also accepts x-api-key.
func (s *Server) authorized(r *http.Request, side Side) (ok bool, msg string) {
	if side == SideAnthropic {
		if k := r.Header.Get("x-api-key"); k != "" {
			return s.keyMatches(k)
		}
	}
	h := r.Header.Get("Authorization")
	k, found := strings.CutPrefix(h, "Bearer ")
	if !found || k == "" {
		return false, "Authentication Fails (auth header format should be Bearer sk-...)"
	}
	return s.keyMatches(k)
}

func (s *Server) keyMatches(k string) (bool, string) {
	if k == s.key {
		return true, ""
	}
	tail := k
	if len(tail) > 4 {
		tail = tail[len(tail)-4:]
	}
	return false, "Authentication Fails, Your api key: ****" + tail + " is invalid"
}

// wait sleeps d unless the request or the server ends first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// deepseekError is DeepSeek's error body (used on both sides: the Anthropic
// endpoint answers errors in the same shape).
// The field order is DeepSeek's: message, type, param, code.
func deepseekError(message, typ string) errorBody {
	return errorBody{Error: errorDetail{Message: message, Type: typ, Code: "invalid_request_error"}}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    string `json:"code"`
}

// documentedError is the body DeepSeek sends for status.
func documentedError(status int) errorBody {
	switch status {
	case 400:
		return deepseekError("Invalid request: the request body has an invalid format", "invalid_request_error")
	case 401:
		return deepseekError("Authentication Fails, Your api key: ****-key is invalid", "authentication_error")
	case 402:
		return deepseekError("Insufficient Balance", "unknown_error")
	case 422:
		return deepseekError("Invalid parameters: max_tokens must be a positive integer", "invalid_request_error")
	case 429:
		return deepseekError("Rate Limit Reached: you are sending requests too quickly, please slow down", "rate_limit_error")
	case 500:
		return deepseekError("Server Error: the server had an internal error, please retry after a brief wait", "server_error")
	case 503:
		return deepseekError("Server Overloaded: the server is overloaded due to high traffic, please retry after a brief wait", "server_error")
	}
	return deepseekError(http.StatusText(status), "unknown_error")
}

// MissingReasoningBody is the exact 400 body DeepSeek sends when an assistant
// tool-call message comes back without its reasoning_content.
const MissingReasoningBody = `{"error":{"message":"The reasoning_content in the thinking mode must be passed back to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// writeErrorTurn answers an error turn.
func writeErrorTurn(w http.ResponseWriter, t Turn) {
	if t.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(t.RetryAfter))
	}
	if t.ErrorBody != "" {
		writeRaw(w, t.Status, t.ErrorBody)
		return
	}
	writeJSON(w, t.Status, documentedError(t.Status))
}

// reset drops the connection with a TCP RST and no response.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("deepseektest: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// cut flushes what was written and closes the connection mid-body.
func cut(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	_ = conn.Close()
}

// chunks splits text into word-sized stream pieces.
func chunks(text string) []string {
	if text == "" {
		return nil
	}
	parts := strings.SplitAfter(text, " ")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// usageFor is the scripted usage or an estimate from sizes (4 bytes a token).
func usageFor(t Turn, body []byte) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	args := 0
	for _, c := range t.ToolCalls {
		args += len(c.Name) + len(c.Arguments)
	}
	u := Usage{
		InputTokens:  int64(len(body)/4 + 1),
		OutputTokens: int64((len(t.Text)+len(t.Reasoning)+args)/4 + 1),
	}
	if t.Reasoning != "" {
		u.ReasoningTokens = int64(len(t.Reasoning)/4 + 1)
	}
	return u
}

// sse writes one SSE block and flushes.
func sse(w http.ResponseWriter, block string) {
	_, _ = io.WriteString(w, block)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// logRequestLocked writes the request-log line; s.mu is held.
func (s *Server) logRequestLocked(r Request) {
	h := map[string]string{}
	for k, v := range r.Header {
		switch strings.ToLower(k) {
		case "authorization", "x-api-key":
			h[k] = "[redacted]"
		default:
			h[k] = strings.Join(v, ", ")
		}
	}
	var tools []string
	ts, _ := r.JSON["tools"].([]any)
	for _, t := range ts {
		tm, _ := t.(map[string]any)
		if n, ok := tm["name"].(string); ok {
			tools = append(tools, n)
		}
	}
	line := mustJSON(map[string]any{
		"time": r.Time.UTC().Format(time.RFC3339Nano), "side": r.Side, "path": r.Path, "query": r.RawQuery,
		"model": r.Model(), "stream": r.Stream(), "max_tokens": r.MaxTokens(), "tools": tools,
		"messages": len(r.Messages()), "bytes": len(r.Body), "headers": h,
	})
	_, _ = io.WriteString(s.reqLog, line+"\n")
}

// toolCalls copies a turn's tool calls for an answer: a call without an id
// gets a fresh one with prefix, a call without arguments gets {}.
func (s *Server) toolCalls(calls []ToolCall, prefix string) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		if c.ID == "" {
			c.ID = s.newID(prefix)
		}
		if len(c.Arguments) == 0 {
			c.Arguments = []byte(`{}`)
		}
		out = append(out, c)
	}
	return out
}

// stream sends a streamed answer: the SSE headers, an empty first write,
// t.KeepAlives keepAlive blocks, then blocks, each after t.ChunkDelay. After
// the first block, t.Break sends malformed and ends, or cuts the connection.
// It returns early when the request or the server ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, t Turn, keepAlive string, blocks []string, malformed string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "")
	for range t.KeepAlives {
		sse(w, keepAlive)
		if !s.wait(r.Context(), t.ChunkDelay) {
			return
		}
	}
	for i, b := range blocks {
		if i > 0 && !s.wait(r.Context(), t.ChunkDelay) {
			return
		}
		sse(w, b)
		if i == 0 {
			switch t.Break {
			case BreakMalformed:
				sse(w, malformed)
				return
			case BreakCut:
				cut(w)
				return
			}
		}
	}
}

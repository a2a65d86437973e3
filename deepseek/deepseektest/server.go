package deepseektest

import (
	"fmt"
	"io"
	"net"
	"net/http"
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

// WithBalance sets what GET /user/balance answers: the total in CNY, and
// is_available false when it is "0.00" (an empty balance; chat calls still
// answer as scripted, so a test scripts the 402 itself).
func WithBalance(total string) Option { return func(s *Server) { s.balance = total } }

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
	balance     string // GET /user/balance's total, in CNY; "0.00" is_available false

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
		balance:       "110.00",
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
	mux.HandleFunc("GET /user/balance", s.handleBalance)
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

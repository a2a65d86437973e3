package prompt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ServicePath is the path of the daemon's approval endpoint.
const ServicePath = "/approve"

// Bounds of one job's channel: tool calls answered at once (Claude Code
// sends a turn's calls side by side; a job's command that found the token
// can ask too), the size of one question (a Write's whole content), the
// rate of questions (each one is an audit record: a command asking in a
// loop must not fill the state dir), and how long one question may take to
// arrive.
const (
	maxInFlightPerJob = 32
	maxQuestionBytes  = 16 << 20
	questionRate      = 20 // per second, with a burst of questionBurst
	questionBurst     = 200
	questionReadLimit = 30 * time.Second
	// What one question may name and hold: a tool's name and Claude Code's
	// id of the call are short words; an input holds at most
	// maxQuestionValues JSON values (a body of many tiny values decodes to
	// many times its size).
	maxToolName       = 128
	maxToolUseID      = 128
	maxQuestionValues = 20_000
	// maxBytesInFlight bounds the bodies of every job's questions being
	// read and answered at once, across the daemon.
	maxBytesInFlight = 64 << 20
	// maxJobBytesInFlight is one job's share of it, so that no job can
	// hold all of it.
	maxJobBytesInFlight = 24 << 20
)

// word matches a tool name or a tool_use_id.
var word = regexp.MustCompile(`^[A-Za-z0-9_.:-]*$`)

// ErrJobEnded is the cause a registered job's questions end with when the
// job is unregistered.
var ErrJobEnded = errors.New("the job ended")

// Service is the approval logic of the daemon: every job's approval child
// forwards each tool call to it over loopback HTTP with the job's own token,
// and it classifies the call, records it, asks a human when the rules say so
// and answers. The channel carries questions only: the token names one job,
// whose rules and policy the daemon holds in memory, so whoever holds the
// token (the child, or a command of the job that read it) can ask for that
// job alone and never answer, approve another job's request or flip a
// switch. Nothing of the approval queue, the audit log, the ledgers or the
// switches is in a job's jail.
type Service struct {
	dir statedir.Dir
	log zerolog.Logger
	// Notify, when set before the first Register, sees each request once it
	// is queued for a human, and Decided sees how it ended.
	Notify  func(approvals.PendingRequest)
	Decided func(approvals.PendingRequest, approvals.Decision)

	mu sync.Mutex
	// inFlight is the byte budget of the bodies being answered.
	inFlight *semaphore.Weighted

	jobs    map[[32]byte]*serviceJob
	byID    map[string][32]byte
	closed  bool
	url     string
	srv     *http.Server
	serving chan struct{}
}

type serviceJob struct {
	id     string
	p      *Prompter
	ctx    context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{}
	rate   *rate.Limiter
	bytes  *semaphore.Weighted // its share of the bodies being read
}

// NewService returns the approval service of the state dir; Listen starts
// it.
func NewService(dir statedir.Dir, log zerolog.Logger) *Service {
	return &Service{dir: dir, log: log.With().Str("component", "approvals").Logger(),
		jobs: map[[32]byte]*serviceJob{}, byID: map[string][32]byte{}, inFlight: semaphore.NewWeighted(maxBytesInFlight)}
}

// Listen serves the service on a free loopback port until Close.
func (s *Service) Listen() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("approval service: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+ServicePath, s)
	s.mu.Lock()
	s.url = "http://" + ln.Addr().String() + ServicePath
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
	s.serving = make(chan struct{})
	srv, done := s.srv, s.serving
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("the approval service stopped: every job's tool calls that need an answer are denied")
		}
	}()
	return nil
}

// URL is where the children post ("" before Listen).
func (s *Service) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Register makes cfg's job known to the service and returns what its
// approval child needs: the service's URL and the job's token. A job
// registered again (a retried start) gets a new token; the old one ends.
func (s *Service) Register(cfg Config) (ChildConfig, error) {
	p, err := NewPrompter(cfg, s.log)
	if err != nil {
		return ChildConfig{}, err
	}
	if s.Notify != nil {
		p.queue.Notify(s.Notify)
	}
	p.decided = s.Decided
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return ChildConfig{}, fmt.Errorf("approval token: %w", err)
	}
	token := hex.EncodeToString(raw)
	ctx, cancel := context.WithCancelCause(context.Background())
	j := &serviceJob{id: cfg.JobID, p: p, ctx: ctx, cancel: cancel, slots: make(chan struct{}, maxInFlightPerJob),
		rate: rate.NewLimiter(questionRate, questionBurst), bytes: semaphore.NewWeighted(maxJobBytesInFlight)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel(approvals.ErrShutdown)
		return ChildConfig{}, errors.New("approval service: the bridge is stopping")
	}
	if s.url == "" {
		cancel(ErrJobEnded)
		return ChildConfig{}, errors.New("approval service: not listening")
	}
	if old, ok := s.byID[cfg.JobID]; ok {
		s.jobs[old].cancel(ErrJobEnded)
		delete(s.jobs, old)
	}
	key := sha256.Sum256([]byte(token))
	s.jobs[key] = j
	s.byID[cfg.JobID] = key
	return ChildConfig{JobID: cfg.JobID, URL: s.url, Token: token, Rules: cfg.rules()}, nil
}

// Config returns the config a registered job's questions are answered with.
func (s *Service) Config(jobID string) (Config, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, ok := s.byID[jobID]
	if !ok {
		return Config{}, false
	}
	return s.jobs[key].p.cfg, true
}

// Unregister forgets the job: its token answers nothing more, and a
// question of it still waiting for a human is cancelled.
func (s *Service) Unregister(jobID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key, ok := s.byID[jobID]; ok {
		s.jobs[key].cancel(ErrJobEnded)
		delete(s.jobs, key)
		delete(s.byID, jobID)
	}
}

// Close stops the service. A question still waiting for a human is
// recorded as unanswered because the bridge stopped (never as a denial by
// anyone), and its job's harness gets a deny. It waits for the answers in
// flight until ctx ends.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for key, j := range s.jobs {
		j.cancel(approvals.ErrShutdown)
		delete(s.jobs, key)
	}
	clear(s.byID)
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// question is what a child posts: the permission prompt tool's arguments.
type question struct {
	ToolName  string         `json:"tool_name"`
	Input     map[string]any `json:"input"`
	ToolUseID string         `json:"tool_use_id"`
	// Malformed is set by the child when the input was not an object.
	Malformed any `json:"malformed,omitempty"`
	// View is the rules' verdict in the job's view (the child's); a
	// question without one is judged in the daemon's view alone.
	View *rules.Verdict `json:"view,omitempty"`
}

// request is the call the rules classify.
func (q question) request() rules.Request {
	if q.Malformed != nil {
		return rules.Request{Input: map[string]any{"_malformed_input": q.Malformed}}
	}
	return rules.Request{Tool: q.ToolName, Input: q.Input}
}

// ServeHTTP answers one question: 401 for a token no job holds, 400 for a
// body that is not a question, else 200 with the Answer (a deny when the job
// asks too much at once).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const bearer = "Bearer "
	auth := r.Header.Get("Authorization")
	if len(auth) <= len(bearer) || auth[:len(bearer)] != bearer {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	key := sha256.Sum256([]byte(auth[len(bearer):]))
	s.mu.Lock()
	j, ok := s.jobs[key]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no job holds this token (it ended, or the bridge restarted)", http.StatusUnauthorized)
		return
	}
	if !j.rate.Allow() {
		s.log.Warn().Str("job", j.id).Msg("denied unrecorded: the job asks more than the channel's rate")
		writeAnswer(w, denyAnswer(fmt.Sprintf("Denied: this job asks for more than %d tool calls a second. Do not try to work around this denial; report it in your final answer.", questionRate)))
		return
	}
	// The slot is taken before the question is read: at most
	// maxInFlightPerJob questions of a job are in memory at once.
	select {
	case j.slots <- struct{}{}:
		defer func() { <-j.slots }()
	default:
		s.log.Warn().Str("job", j.id).Int("limit", maxInFlightPerJob).Msg("denied: the job has too many tool calls waiting at once")
		writeAnswer(w, denyAnswer(fmt.Sprintf("Denied: this job already has %d tool calls waiting for an answer. Do not try to work around this denial; report it in your final answer.", maxInFlightPerJob)))
		return
	}
	// Its bytes are taken from the daemon's budget before it is read, by its
	// declared length (the child always sends one).
	size := r.ContentLength
	if size <= 0 || size > maxQuestionBytes {
		http.Error(w, fmt.Sprintf("a question needs a Content-Length of at most %d bytes", maxQuestionBytes), http.StatusRequestEntityTooLarge)
		return
	}
	if !j.bytes.TryAcquire(size) {
		s.log.Warn().Str("job", j.id).Int64("bytes", size).Msg("denied unread: the job's questions being read are over its share")
		writeAnswer(w, denyAnswer("Denied: the bridge is reading too many tool calls at once. Do not try to work around this denial; report it in your final answer."))
		return
	}
	if !s.inFlight.TryAcquire(size) {
		j.bytes.Release(size)
		s.log.Warn().Str("job", j.id).Int64("bytes", size).Msg("denied unread: the approval service is reading too many questions at once")
		writeAnswer(w, denyAnswer("Denied: the bridge is reading too many tool calls at once. Do not try to work around this denial; report it in your final answer."))
		return
	}
	// The bytes are given back once the question is decoded, not when it
	// is answered: a question waiting for a person holds no budget.
	release := sync.OnceFunc(func() { s.inFlight.Release(size); j.bytes.Release(size) })
	defer release()
	// The question must arrive within questionReadLimit; the answer may
	// then wait for a human (a server-wide ReadTimeout would cancel that
	// wait when it passes).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(questionReadLimit))
	body := make([]byte, size)
	if _, err := io.ReadFull(http.MaxBytesReader(w, r.Body, size), body); err != nil {
		http.Error(w, "not a question: "+err.Error(), http.StatusBadRequest)
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	q, err := readQuestion(body)
	body = nil
	release()
	if err != nil {
		s.log.Warn().Str("job", j.id).Err(err).Msg("refused a question that is not one the approval child sends")
		_ = j.p.record(approvals.AuditRecord{Event: approvals.EventRefused, JobID: j.id, Reason: "refused a question that is not one the approval child sends: " + err.Error(), By: "bridge"})
		http.Error(w, "not a question: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := context.Cause(j.ctx); err != nil {
		// Unregistered (or the bridge stopping) while the question arrived.
		writeAnswer(w, denyAnswer("Denied: the job has ended ("+err.Error()+"). Do not try to work around this denial; report it in your final answer."))
		return
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(j.ctx, func() { cancel(context.Cause(j.ctx)) })
	ans := j.p.AnswerCall(ctx, q.request(), q.ToolUseID, q.View)
	stop()
	cancel(nil)
	writeAnswer(w, ans)
}

// readQuestion decodes a question and checks it is one the child sends:
// a tool name and a call id that are short words, and an input of at most
// maxQuestionValues values (counted before anything is decoded into maps).
func readQuestion(body []byte) (question, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	values := 0
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return question{}, err
		}
		if values++; values > maxQuestionValues {
			return question{}, fmt.Errorf("it holds over %d JSON values", maxQuestionValues)
		}
	}
	var q question
	if err := json.Unmarshal(body, &q); err != nil {
		return question{}, err
	}
	switch {
	case len(q.ToolName) > maxToolName || !word.MatchString(q.ToolName):
		return question{}, fmt.Errorf("the tool name is not a word of at most %d characters", maxToolName)
	case len(q.ToolUseID) > maxToolUseID || !word.MatchString(q.ToolUseID):
		return question{}, fmt.Errorf("the tool_use_id is not a word of at most %d characters", maxToolUseID)
	case q.View != nil && q.View.Decision != rules.Allow && q.View.Decision != rules.Ask && q.View.Decision != rules.Deny:
		return question{}, fmt.Errorf("the view's decision %q is not allow, ask or deny", q.View.Decision)
	}
	if q.View != nil {
		// The view's words reach the audit log and the ledger when it is
		// the stricter: one line each, like the rules' own.
		q.View.Reason, q.View.Summary = rules.Clip(q.View.Reason), rules.Clip(q.View.Summary)
	}
	return q, nil
}

func writeAnswer(w http.ResponseWriter, ans Answer) {
	w.Header().Set("Content-Type", "application/json")
	// A child that stops reading must not hold the answer's buffer: the
	// write has its own deadline.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(questionReadLimit))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // an allow echoes the input: "<" must stay one byte, not six
	_ = enc.Encode(ans)
}

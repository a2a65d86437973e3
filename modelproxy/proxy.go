// Package modelproxy serves the Anthropic Messages API on loopback to agent
// harnesses, swapping per-job tokens for the real DeepSeek key and keeping
// per-job usage, cost and ceilings.
//
// A harness is given ANTHROPIC_BASE_URL = URL() and ANTHROPIC_AUTH_TOKEN = a
// token from Open; the real key never leaves this process. The token is valid
// until Close. The proxy listens on its own loopback listener, so it is never
// reachable through the public capability URL, and it refuses any peer that is
// not loopback as well.
//
// Accounting: every response's usage (message_start and the cumulative
// message_delta when streamed, the usage block when not) is priced at
// Options.Price (the daemon's model catalog) of the model that answer names (message_start's or the
// body's "model"), else the model the request named, else Options.Model —
// so a pro request is never priced as flash. A job that has crossed its cost or token
// ceiling, or a day that has crossed the daily ceiling, gets its next request
// refused, and Options.OnJobFault is called once for that job. Upstream 429
// and 5xx are retried here (bounded, honouring Retry-After) before any byte
// reaches the harness; upstream 401 and 402 end the job with an actionable
// message.
//
// Limits: every answer passes through as it comes, held to an output cap that
// follows from the request's max_tokens (responseCap); an answer past it, or
// a streamed event longer than maxRelayEvent, is cut off between two events
// and ended with an error event that says so. The proxy holds at most one
// event of a streamed answer, and a non-streamed answer up to the cap.
package modelproxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Defaults of the explicit limits in Options.
const (
	DefaultMaxAttempts    = 4
	DefaultMaxRetryWait   = 60 * time.Second
	DefaultBaseBackoff    = 1 * time.Second
	DefaultMaxBackoff     = 16 * time.Second
	DefaultMaxRequestBody = 32 << 20 // Claude Code sends the whole conversation each turn
	DefaultCloseWait      = 3 * time.Second
	// A non-streamed answer's headers come only when it is complete; streamed
	// ones come at once (DeepSeek sends keep-alives while busy).
	responseHeaderTimeout = 10 * time.Minute
	maxErrorBody          = 1 << 20
	shutdownGrace         = 5 * time.Second
)

// Errors of the gateway side.
var (
	ErrNoAPIKey     = errors.New("modelproxy: no DeepSeek API key: set DEEPSEEK_API_KEY")
	ErrNotListening = errors.New("modelproxy: the model proxy is not listening")
	ErrUnknownJob   = errors.New("modelproxy: no open model token for this job")
	ErrJobOpen      = errors.New("modelproxy: the job already holds a model token")
	ErrNotLoopback  = errors.New("modelproxy: the model proxy listens on loopback only")
)

// Options configure a Proxy. Upstream, APIKey and Model come from the Config
// (BRIDGE_ANTHROPIC_BASE_URL or DEEPSEEK_BASE_URL+"/anthropic", DEEPSEEK_API_KEY,
// DEEPSEEK_MODEL); zero limits take the defaults above.
type Options struct {
	Upstream string // Anthropic base URL; the proxy appends /v1/messages…
	APIKey   string // the real key; sent upstream only
	Model    string // prices a response that names no model, in neither answer nor request
	// Price is a model's price (the daemon's model catalog: built-in or
	// DEEPSEEK_MODELS); nil = deepseek.PriceFor.
	Price func(model string) deepseek.Price

	JobMaxCostUSD   float64 // BRIDGE_JOB_MAX_COST_USD; 0 = no ceiling
	JobMaxTokens    int64   // BRIDGE_JOB_MAX_TOKENS; 0 = no ceiling
	DailyMaxCostUSD float64 // BRIDGE_DAILY_MAX_COST_USD; 0 = off

	// StateDir keeps the daily total (spend-YYYY-MM-DD.json). A zero Dir keeps
	// it in memory only.
	StateDir statedir.Dir

	Logger *zerolog.Logger // optional

	// OnJobFault is called once per job when the proxy has decided the job
	// cannot go on (budget exceeded, key rejected, balance gone); reason is a
	// sentence for the job's error. It runs on the request's goroutine after the
	// response was written and no lock is held, so it may call Close.
	OnJobFault func(jobID string, f Fault)

	HTTPClient *http.Client     // default: a client without overall timeout (streams are long)
	Clock      func() time.Time // default time.Now; decides the UTC day

	MaxAttempts    int           // upstream attempts per request (default 4)
	MaxRetryWait   time.Duration // total waiting between attempts (default 60 s)
	BaseBackoff    time.Duration // first backoff without Retry-After (default 1 s, doubling)
	MaxRequestBody int64         // bytes (default 32 MiB)
	CloseWait      time.Duration // how long Close waits for the job's in-flight calls to settle (default 3 s)
}

// Stats are proxy-wide counters since New.
type Stats struct {
	Requests       int64 `json:"requests"`        // requests admitted and sent upstream
	Retries        int64 `json:"retries"`         // extra upstream attempts
	Refused        int64 `json:"refused"`         // refused before reaching the upstream
	UpstreamErrors int64 `json:"upstream_errors"` // non-2xx answers or transport failures handed back
}

// Proxy is the model proxy. Create it with New, start it with Listen or
// Serve, hand tokens out with Open, take them back with Close.
type Proxy struct {
	opts     Options
	upstream string // without trailing slash
	log      zerolog.Logger
	client   *http.Client
	clock    func() time.Time

	mu      sync.Mutex
	jobs    map[string]*job
	byHash  map[[sha256.Size]byte]*job
	ledger  dayLedger
	stats   Stats
	url     string
	srv     *http.Server
	done    chan struct{} // closed when the server has stopped
	cancel  context.CancelFunc
	stopped bool // Shutdown began: no new tokens

	persistMu sync.Mutex // serialises ledger writes
}

// job is the proxy's view of one agent job. Fields after mu-guarded are
// guarded by Proxy.mu.
type job struct {
	id     string
	hash   [sha256.Size]byte
	ctx    context.Context // cancelled by Close: in-flight upstream calls end
	cancel context.CancelFunc

	// guarded by Proxy.mu
	usage    Usage
	active   int           // in-flight requests
	idle     chan struct{} // closed when active drops to 0 after Close began
	fault    *refusal      // set once; every later request gets it
	notified bool          // OnJobFault already called
	// lastError is the class of the upstream's last answer when it was an
	// error (result.errClass), "" after an answer that was not.
	lastError  string
	closed     bool
	noThinking bool // DisableThinking: every call runs with thinking off
}

// New checks o and returns a Proxy that is not listening yet.
func New(o Options) (*Proxy, error) {
	if o.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	u, err := url.Parse(o.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("modelproxy: upstream %q is not an http(s) URL: set BRIDGE_ANTHROPIC_BASE_URL or DEEPSEEK_BASE_URL", o.Upstream)
	}
	if o.JobMaxCostUSD < 0 || o.JobMaxTokens < 0 || o.DailyMaxCostUSD < 0 {
		return nil, errors.New("modelproxy: ceilings must not be negative (0 means none)")
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = DefaultMaxRequestBody
	}
	if o.CloseWait <= 0 {
		o.CloseWait = DefaultCloseWait
	}
	p := &Proxy{
		opts:     o,
		upstream: strings.TrimRight(o.Upstream, "/"),
		log:      zerolog.Nop(),
		client:   o.HTTPClient,
		clock:    o.Clock,
		jobs:     map[string]*job{},
		byHash:   map[[sha256.Size]byte]*job{},
	}
	if o.Logger != nil {
		p.log = o.Logger.With().Str("component", "modelproxy").Logger()
	}
	if p.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = responseHeaderTimeout
		p.client = &http.Client{Transport: tr}
	}
	if p.clock == nil {
		p.clock = time.Now
	}
	p.ledger = p.openDay(dayOf(p.clock()))
	return p, nil
}

// Listen binds addr, which must be a loopback address such as "127.0.0.1:0",
// and serves in the background until ctx ends or Shutdown is called.
func (p *Proxy) Listen(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("modelproxy: listen %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%w: %s", ErrNotLoopback, addr)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("modelproxy: listen %s: %w", addr, err)
	}
	if err := p.start(ctx, l); err != nil {
		l.Close()
		return err
	}
	return nil
}

// Serve serves on l (a loopback listener) until ctx ends, then shuts down.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	if err := p.start(ctx, l); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	return p.Shutdown(sctx)
}

func (p *Proxy) start(ctx context.Context, l net.Listener) error {
	tcp, ok := l.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return fmt.Errorf("%w: %s", ErrNotLoopback, l.Addr())
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	p.mu.Lock()
	if p.srv != nil {
		p.mu.Unlock()
		cancel()
		return errors.New("modelproxy: already serving")
	}
	p.srv, p.cancel, p.done = srv, cancel, make(chan struct{})
	p.url = "http://" + l.Addr().String()
	done := p.done
	p.mu.Unlock()

	stopWatch := context.AfterFunc(ctx, func() {
		sctx, c := context.WithTimeout(context.Background(), shutdownGrace)
		defer c()
		p.Shutdown(sctx)
	})
	go func() {
		defer close(done)
		defer stopWatch()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error().Err(err).Msg("model proxy stopped")
		}
	}()
	p.log.Info().Str("url", p.url).Str("upstream", p.upstream).Msg("model proxy listening")
	return nil
}

// Shutdown stops the server: in-flight model calls are cancelled, then the
// server is closed within ctx. It returns once the serving goroutine ended.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	srv, cancel, done := p.srv, p.cancel, p.done
	p.stopped = true
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	cancel() // request contexts derive from it: upstream calls and streams end
	err := srv.Shutdown(ctx)
	if err != nil {
		srv.Close()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}

// URL is the base URL harnesses use (ANTHROPIC_BASE_URL); "" before Listen.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// Handler is the proxy's handler, for tests and for callers that run their
// own loopback server.
func (p *Proxy) Handler() http.Handler { return p }

// gateway is the shape the job registry consumes (jobs.ModelGateway).
type gateway interface {
	Open(jobID string) (baseURL, token string, err error)
	Revoke(jobID string)
	Close(jobID string) (Usage, error)
}

var _ gateway = (*Proxy)(nil)

// Open issues a fresh token for jobID, valid until Close(jobID). baseURL is
// what the harness gets as ANTHROPIC_BASE_URL, token its ANTHROPIC_AUTH_TOKEN.
func (p *Proxy) Open(jobID string) (baseURL, token string, err error) {
	if jobID == "" {
		return "", "", errors.New("modelproxy: empty job id")
	}
	var raw [32]byte // 256 bits
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("modelproxy: token: %w", err)
	}
	token = "bridge-job-" + base64.RawURLEncoding.EncodeToString(raw[:])
	ctx, cancel := context.WithCancel(context.Background())
	j := &job{id: jobID, hash: sha256.Sum256([]byte(token)), ctx: ctx, cancel: cancel}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.url == "" || p.stopped {
		cancel()
		return "", "", ErrNotListening
	}
	if _, ok := p.jobs[jobID]; ok {
		cancel()
		return "", "", fmt.Errorf("%w: %s", ErrJobOpen, jobID)
	}
	p.jobs[jobID] = j
	p.byHash[j.hash] = j
	return p.url, token, nil
}

// Revoke makes jobID's token invalid at once — any later request gets 401 —
// and cancels its in-flight model calls, without waiting: the registry calls
// it the moment a job is stopped. What those calls had used still counts;
// Close, later, returns the final usage and forgets the job. Unknown ids are
// ignored.
func (p *Proxy) Revoke(jobID string) {
	p.mu.Lock()
	j, ok := p.jobs[jobID]
	if ok {
		delete(p.byHash, j.hash)
		j.closed = true
	}
	p.mu.Unlock()
	if ok {
		j.cancel()
	}
}

// Close revokes jobID's token at once (any later request gets 401), cancels
// its in-flight model calls, waits up to CloseWait for them to be accounted,
// and returns the job's final usage.
func (p *Proxy) Close(jobID string) (Usage, error) {
	p.mu.Lock()
	j, ok := p.jobs[jobID]
	if !ok {
		p.mu.Unlock()
		return Usage{}, fmt.Errorf("%w: %s", ErrUnknownJob, jobID)
	}
	delete(p.jobs, jobID)
	delete(p.byHash, j.hash)
	j.closed = true
	var idle chan struct{}
	if j.active > 0 {
		j.idle = make(chan struct{})
		idle = j.idle
	}
	p.mu.Unlock()

	j.cancel()
	if idle != nil {
		t := time.NewTimer(p.opts.CloseWait)
		select {
		case <-idle:
		case <-t.C:
			p.log.Warn().Str("job", jobID).Msg("model calls still running after close; their usage counts for the day only")
		}
		t.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usageLocked(j), nil
}

// Usage is the running total of an open job.
func (p *Proxy) Usage(jobID string) (Usage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[jobID]
	if !ok {
		return Usage{}, false
	}
	return p.usageLocked(j), true
}

// DailyUsage is the total of all jobs on the current UTC day.
func (p *Proxy) DailyUsage() Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ledgerLocked().Usage
}

// Stats returns the proxy-wide counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// usageLocked is j's total; its cost is the sum of each answer priced at its
// own model.
func (p *Proxy) usageLocked(j *job) Usage {
	u := j.usage
	u.LastUpstreamError = j.lastError
	return u
}

// ledgerLocked returns today's ledger, switching to a new day when the clock
// has crossed midnight UTC.
func (p *Proxy) ledgerLocked() *dayLedger {
	day := dayOf(p.clock())
	if p.ledger.Day != day {
		p.ledger = p.openDay(day)
	}
	return &p.ledger
}

// persistLedger writes today's ledger to the state dir.
func (p *Proxy) persistLedger() {
	p.persistMu.Lock()
	defer p.persistMu.Unlock()
	p.mu.Lock()
	l := *p.ledgerLocked()
	p.mu.Unlock()
	path := spendFile(p.opts.StateDir, l.Day)
	if path == "" {
		return
	}
	if err := statedir.WriteJSON(path, l); err != nil {
		p.log.Error().Err(err).Msg("could not persist the daily spend")
	}
}

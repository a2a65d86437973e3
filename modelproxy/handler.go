package modelproxy

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// refusal is an Anthropic-shaped error answer.
type refusal struct {
	status  int
	errType string // Anthropic error type
	message string
}

// Anthropic error types (https://docs.anthropic.com/en/api/errors).
const (
	errInvalidRequest = "invalid_request_error"
	errAuthentication = "authentication_error"
	errBilling        = "billing_error"
	errPermission     = "permission_error"
	errNotFound       = "not_found_error"
	errTooLarge       = "request_too_large"
	errAPI            = "api_error"
)

// Messages the job's error carries; the registry shows them to the caller.
const (
	MsgKeyRejected         = "key rejected: DeepSeek refused the API key (401) — check DEEPSEEK_API_KEY"
	MsgInsufficientBalance = "insufficient balance: DeepSeek says the account is out of credit (402) — top up at https://platform.deepseek.com"
	msgBadToken            = "invalid, expired or revoked job token: model calls are allowed only while the job runs"
	msgMissingToken        = "missing job token: send it as x-api-key or Authorization: Bearer"
)

func writeError(w http.ResponseWriter, r refusal) {
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": r.errType, "message": r.message},
	})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(r.status)
	w.Write(body)
}

// ServeHTTP is the proxy's whole surface: POST /v1/messages and POST
// /v1/messages/count_tokens, from loopback, with a live job token.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isLoopbackPeer(r.RemoteAddr) {
		p.refuse(w, refusal{http.StatusForbidden, errPermission, "the model proxy accepts connections from loopback only"})
		p.log.Warn().Str("remote", r.RemoteAddr).Msg("model proxy: non-loopback peer refused")
		return
	}
	billable := r.URL.Path == "/v1/messages"
	if r.Method != http.MethodPost || (!billable && r.URL.Path != "/v1/messages/count_tokens") {
		p.refuse(w, refusal{http.StatusNotFound, errNotFound, "not found: the model proxy serves POST /v1/messages and /v1/messages/count_tokens"})
		return
	}
	tokens := requestTokens(r)
	if len(tokens) == 0 {
		p.refuse(w, refusal{http.StatusUnauthorized, errAuthentication, msgMissingToken})
		return
	}
	j, ref, notify := p.admit(tokens, billable)
	if j == nil {
		p.refuse(w, ref)
		return
	}
	if ref.status != 0 {
		p.release(j, nil)
		p.refuse(w, ref)
		p.log.Warn().Str("job", j.id).Int("status", ref.status).Str("reason", ref.message).Msg("model call refused")
		if notify {
			p.notify(w, j, ref)
		}
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.opts.MaxRequestBody))
	if err != nil {
		p.release(j, nil)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			p.refuse(w, refusal{http.StatusRequestEntityTooLarge, errTooLarge,
				fmt.Sprintf("request body is larger than the model proxy's %d-byte limit", p.opts.MaxRequestBody)})
			return
		}
		p.refuse(w, refusal{http.StatusBadRequest, errInvalidRequest, "could not read the request body"})
		return
	}

	p.mu.Lock()
	noThinking := j.noThinking
	p.mu.Unlock()
	if noThinking && billable {
		body = withoutThinking(body)
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	model, maxTokens := requestFields(body)
	res := p.forward(sw, r, j, body, billable, maxTokens)
	res.cost = res.usage.cost(priceOf(p.price(), res.model, model, p.opts.Model))
	fault := p.release(j, &res)
	p.log.Debug().Str("job", j.id).Str("path", r.URL.Path).Int("status", sw.status).
		Int("retries", res.retries).Int64("input_tokens", res.usage.Input+res.usage.CacheCreation).
		Int64("cache_read_tokens", res.usage.CacheRead).Int64("output_tokens", res.usage.Output).
		Str("model", res.model).Float64("cost_usd", res.cost).
		Dur("took", time.Since(start)).Msg("model call")
	if fault != nil {
		p.notify(w, j, *fault)
	}
}

// statusWriter remembers the status for the log; Unwrap keeps
// http.ResponseController (flushing) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// refuse answers r without involving the upstream.
func (p *Proxy) refuse(w http.ResponseWriter, r refusal) {
	p.mu.Lock()
	p.stats.Refused++
	p.mu.Unlock()
	writeError(w, r)
}

// notify calls OnJobFault. Called with no lock held, after the response was
// written; it is flushed first, so the harness has the reason even if the
// callback stops it at once.
func (p *Proxy) notify(w http.ResponseWriter, j *job, ref refusal) {
	http.NewResponseController(w).Flush()
	f := Fault{Class: faultClass(ref), Reason: ref.message}
	p.log.Warn().Str("job", j.id).Str("class", f.Class).Str("reason", f.Reason).Msg("model proxy ends the job")
	if p.opts.OnJobFault != nil {
		p.opts.OnJobFault(j.id, f)
	}
}

// Fault is why the proxy ends a job: its class and, in words, its reason.
type Fault struct {
	// Class is FaultBudget, FaultDailyBudget, FaultKeyRejected or FaultBalance.
	Class  string
	Reason string
}

// The classes of a Fault.
const (
	FaultBudget      = "budget"       // BRIDGE_JOB_MAX_COST_USD or BRIDGE_JOB_MAX_TOKENS
	FaultDailyBudget = "daily_budget" // BRIDGE_DAILY_MAX_COST_USD, or the day's spend unknown
	FaultKeyRejected = "key_rejected" // DeepSeek answered 401
	FaultBalance     = "balance"      // DeepSeek answered 402
)

// faultClass classifies one of the refusals that end a job (a crossed
// ceiling, or DeepSeek's 401 or 402).
func faultClass(ref refusal) string {
	switch {
	case ref.status == http.StatusUnauthorized:
		return FaultKeyRejected
	case ref.message == MsgInsufficientBalance:
		return FaultBalance
	case strings.Contains(ref.message, "BRIDGE_DAILY_MAX_COST_USD"):
		return FaultDailyBudget
	}
	return FaultBudget
}

// admit finds the job of one of tokens and decides whether its request may
// go upstream. It returns the job with active incremented (release it), or a
// nil job with a 401. A non-zero ref means: refuse with it; notify means this
// refusal is the job's first fault and OnJobFault is due.
func (p *Proxy) admit(tokens []string, billable bool) (*job, refusal, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var j *job
	for _, t := range tokens {
		c, ok := p.byHash[sha256.Sum256([]byte(t))]
		if !ok {
			continue
		}
		if j != nil && j != c {
			return nil, refusal{http.StatusUnauthorized, errAuthentication, "two different job tokens in one request"}, false
		}
		j = c
	}
	if j == nil || j.closed {
		return nil, refusal{http.StatusUnauthorized, errAuthentication, msgBadToken}, false
	}
	j.active++
	if j.fault != nil {
		return j, *j.fault, p.markNotifiedLocked(j)
	}
	if !billable {
		return j, refusal{}, false
	}
	if ref, ok := p.ceilingLocked(j); ok {
		j.fault = &ref
		return j, ref, p.markNotifiedLocked(j)
	}
	return j, refusal{}, false
}

func (p *Proxy) markNotifiedLocked(j *job) bool {
	if j.notified {
		return false
	}
	j.notified = true
	return true
}

// ceilingLocked reports the ceiling j (or the day) has crossed, if any.
func (p *Proxy) ceilingLocked(j *job) (refusal, bool) {
	u := p.usageLocked(j)
	o := p.opts
	if o.JobMaxCostUSD > 0 && u.CostUSD >= o.JobMaxCostUSD {
		return budgetRefusal(fmt.Sprintf(
			"budget exceeded: this job spent $%s of its $%s limit (BRIDGE_JOB_MAX_COST_USD)",
			usd(u.CostUSD), usd(o.JobMaxCostUSD))), true
	}
	if o.JobMaxTokens > 0 && u.TotalTokens() >= o.JobMaxTokens {
		return budgetRefusal(fmt.Sprintf(
			"budget exceeded: this job used %d tokens of its %d limit (BRIDGE_JOB_MAX_TOKENS)",
			u.TotalTokens(), o.JobMaxTokens)), true
	}
	if o.DailyMaxCostUSD > 0 {
		if why := p.ledgerLocked().unknown; why != "" {
			return budgetRefusal(fmt.Sprintf(
				"daily spend unknown: %s, so the $%s daily limit (BRIDGE_DAILY_MAX_COST_USD) cannot be enforced; model calls are refused until 00:00 UTC, or fix or delete the file and restart the bridge",
				why, usd(o.DailyMaxCostUSD))), true
		}
		if d := p.ledgerLocked().Usage.CostUSD; d >= o.DailyMaxCostUSD {
			return budgetRefusal(fmt.Sprintf(
				"budget exceeded: all jobs together spent $%s today (UTC) of the $%s daily limit (BRIDGE_DAILY_MAX_COST_USD); model calls resume after 00:00 UTC",
				usd(d), usd(o.DailyMaxCostUSD))), true
		}
	}
	return refusal{}, false
}

// budgetRefusal answers a crossed ceiling. 402 billing_error, because
// Claude Code 2.1.328 neither retries it nor relabels it: measured, its result
// reads "API Error: 402 budget exceeded: …" after one request (403 became
// "Failed to authenticate. …", 400 was sent again five times).
func budgetRefusal(msg string) refusal {
	return refusal{http.StatusPaymentRequired, errBilling, msg}
}

// usd formats dollars: cents when that is exact enough, else up to 6 decimals.
func usd(v float64) string {
	if v >= 0.1 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "00"
	}
	return s
}

// release ends an admitted request: it adds res's usage to the job and the
// day, and returns the job fault res raised (nil if none, or if the job was
// already faulted).
func (p *Proxy) release(j *job, res *result) *refusal {
	var fault *refusal
	persist := false
	p.mu.Lock()
	if res != nil {
		if res.sent {
			p.stats.Requests++
			j.usage.Requests++
		}
		p.stats.Retries += int64(res.retries)
		j.usage.Retries += int64(res.retries)
		if res.upstreamErr {
			p.stats.UpstreamErrors++
		}
		if !res.usage.zero() {
			j.usage.addTokens(res.usage)
			j.usage.CostUSD = deepseek.RoundUSD(j.usage.CostUSD + res.cost)
			day := p.ledgerLocked()
			day.Usage.addTokens(res.usage)
			day.Usage.CostUSD = deepseek.RoundUSD(day.Usage.CostUSD + res.cost)
			persist = true
		}
		if res.sent {
			p.ledgerLocked().Usage.Requests++
			p.ledgerLocked().Usage.Retries += int64(res.retries)
			persist = true
		}
		if res.fault != nil && j.fault == nil {
			j.fault = res.fault
			if p.markNotifiedLocked(j) {
				fault = res.fault
			}
		}
		switch {
		case res.upstreamErr:
			j.lastError = res.errClass()
		case res.sent:
			j.lastError = ""
		}
	}
	j.active--
	if j.active == 0 && j.idle != nil {
		close(j.idle)
		j.idle = nil
	}
	p.mu.Unlock()
	if persist {
		p.persistLedger()
	}
	return fault
}

// requestTokens are the candidate job tokens of r: x-api-key and the bearer.
func requestTokens(r *http.Request) []string {
	var out []string
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		out = append(out, k)
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		if t := strings.TrimSpace(a[7:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func isLoopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

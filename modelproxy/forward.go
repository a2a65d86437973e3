package modelproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
)

// result is what one admitted request did upstream.
type result struct {
	sent        bool // an upstream answer was handed to the client
	retries     int
	upstreamErr bool
	status      int // the upstream's status when it answered with an error (0: it never answered)
	usage       counts
	model       string   // the model the answer names ("" if it names none)
	cost        float64  // usage priced at that model (handler sets it)
	fault       *refusal // the job cannot go on (401, 402 upstream)
}

// hopHeaders are connection-scoped and never forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forward sends body upstream, retrying 429/5xx and transport failures while
// nothing has been written to w, then relays the answer, held to the output
// cap of the request's maxTokens.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, j *job, body []byte, billable bool, maxTokens int64) (res result) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(j.ctx, cancel)() // Close(jobID) ends the call

	target := p.upstream + r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			res.upstreamErr = true
			writeError(w, refusal{http.StatusBadGateway, errAPI, "the model proxy could not build the upstream request"})
			return res
		}
		p.upstreamHeaders(req.Header, r.Header)
		req.ContentLength = int64(len(body))

		resp, err := p.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return p.ended(w, j, res)
			}
			wait, ok := p.retryWait(attempt, waited, nil)
			p.log.Warn().Str("job", j.id).Int("attempt", attempt).Bool("retry", ok).
				Str("error", p.scrub(err.Error())).Msg("upstream unreachable")
			if !ok {
				res.upstreamErr = true
				w.Header().Set("X-Should-Retry", "false")
				writeError(w, refusal{http.StatusBadGateway, errAPI,
					"DeepSeek could not be reached after " + strconv.Itoa(attempt) + " attempts: " + p.scrub(err.Error())})
				return res
			}
			if !backoff.Sleep(ctx, wait) {
				return p.ended(w, j, res)
			}
			waited += wait
			res.retries++
			continue
		}

		if retryable(resp.StatusCode) {
			wait, ok := p.retryWait(attempt, waited, resp.Header)
			p.log.Warn().Str("job", j.id).Int("status", resp.StatusCode).Int("attempt", attempt).
				Bool("retry", ok).Dur("wait", wait).Msg("upstream busy")
			if ok {
				drain(resp)
				if !backoff.Sleep(ctx, wait) {
					return p.ended(w, j, res)
				}
				waited += wait
				res.retries++
				continue
			}
		}

		res.sent = true
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			drain(resp)
			res.upstreamErr, res.status = true, resp.StatusCode
			res.fault = &refusal{http.StatusUnauthorized, errAuthentication, MsgKeyRejected}
			writeError(w, *res.fault)
			return res
		case http.StatusPaymentRequired:
			drain(resp)
			res.upstreamErr, res.status = true, resp.StatusCode
			res.fault = &refusal{http.StatusPaymentRequired, errBilling, MsgInsufficientBalance}
			writeError(w, *res.fault)
			return res
		}
		p.relay(w, resp, j, &res, billable, maxTokens)
		return res
	}
}

// ended answers a request whose upstream call was cut short by the client
// leaving or the job being closed.
func (p *Proxy) ended(w http.ResponseWriter, j *job, res result) result {
	if j.ctx.Err() != nil {
		writeError(w, refusal{http.StatusUnauthorized, errAuthentication, msgBadToken})
		return res
	}
	// The harness left (nobody reads this) or the proxy is shutting down.
	w.Header().Set("X-Should-Retry", "false")
	writeError(w, refusal{http.StatusServiceUnavailable, errAPI, "model call cancelled: the bridge is shutting down"})
	return res
}

// upstreamHeaders copies the harness's headers except hop-by-hop ones and its
// credentials, and adds the real key in both forms DeepSeek accepts.
func (p *Proxy) upstreamHeaders(dst, src http.Header) {
	skip := map[string]bool{
		"X-Api-Key": true, "Authorization": true, "Host": true, "Content-Length": true,
		"Accept-Encoding": true, "Cookie": true,
	}
	for _, h := range hopHeaders {
		skip[h] = true
	}
	for _, f := range connectionTokens(src) {
		skip[http.CanonicalHeaderKey(f)] = true
	}
	for k, vs := range src {
		if !skip[http.CanonicalHeaderKey(k)] {
			dst[k] = append([]string(nil), vs...)
		}
	}
	dst.Set("X-Api-Key", p.opts.APIKey)
	dst.Set("Authorization", "Bearer "+p.opts.APIKey)
	// Uncompressed bytes: the proxy reads the usage, and a compressor upstream
	// must not hold events back.
	dst.Set("Accept-Encoding", "identity")
}

func connectionTokens(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// relay hands an upstream answer to the client: SSE event by event with a
// flush after every read, anything else whole; either within responseCap.
func (p *Proxy) relay(w http.ResponseWriter, resp *http.Response, j *job, res *result, billable bool, maxTokens int64) {
	defer resp.Body.Close()
	skip := map[string]bool{"Content-Length": true}
	for _, h := range hopHeaders {
		skip[h] = true
	}
	for _, f := range connectionTokens(resp.Header) {
		skip[http.CanonicalHeaderKey(f)] = true
	}
	for k, vs := range resp.Header {
		if !skip[http.CanonicalHeaderKey(k)] {
			for _, v := range vs {
				w.Header().Add(k, p.scrub(v))
			}
		}
	}

	if resp.StatusCode >= 300 {
		res.upstreamErr, res.status = true, resp.StatusCode
		if retryable(resp.StatusCode) {
			// The proxy has retried already; the Anthropic SDKs honour this.
			w.Header().Set("X-Should-Retry", "false")
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		b = []byte(p.scrub(string(b)))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		p.log.Warn().Str("job", j.id).Int("status", resp.StatusCode).Msg("upstream error passed to the harness")
		return
	}

	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		p.stream(w, resp, j, res, billable, maxTokens)
		return
	}

	// Whole, to read the usage from it: at most the cap.
	limit := responseCap(maxTokens)
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		res.upstreamErr = true
		writeError(w, refusal{http.StatusBadGateway, errAPI, "the DeepSeek answer was cut off: " + p.scrub(err.Error())})
		return
	}
	if int64(len(b)) > limit {
		res.upstreamErr = true
		msg := overCap(limit, maxTokens)
		p.log.Warn().Str("job", j.id).Int64("max_tokens", maxTokens).Int64("cap", limit).Msg("upstream answer over the output cap; cut off")
		writeError(w, refusal{http.StatusBadGateway, errAPI, msg})
		return
	}
	if billable {
		res.usage, res.model = messageUsage(b)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(resp.StatusCode)
	w.Write(b)
}

// stream copies an SSE body in whole events, flushing after every read so
// each event reaches the harness as soon as the upstream sent it. Past the
// output cap (or maxRelayEvent) it ends the answer with an error event.
func (p *Proxy) stream(w http.ResponseWriter, resp *http.Response, j *job, res *result, billable bool, maxTokens int64) {
	rc := http.NewResponseController(w)
	w.WriteHeader(resp.StatusCode)
	rc.Flush()
	var acct sseUsage
	ef := newEventFramer(maxTokens)
	pass := func(b []byte) bool {
		if billable {
			acct.Write(b)
		}
		if _, err := w.Write(b); err != nil {
			return false // the harness left; the deferred cancel ends the upstream call
		}
		return rc.Flush() == nil
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			out, over := ef.feed(buf[:n])
			if over != "" {
				res.upstreamErr = true
				p.log.Warn().Str("job", j.id).Int64("max_tokens", maxTokens).Int64("cap", ef.limit).Str("why", over).
					Msg("upstream answer over the output cap; cut off")
				w.Write(errorEvent(over))
				rc.Flush()
				break
			}
			if len(out) > 0 && !pass(out) {
				break
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if rest := ef.rest(); len(rest) > 0 {
					pass(rest) // an event without its final blank line
				}
			} else {
				res.upstreamErr = true
				p.log.Warn().Str("job", j.id).Str("error", p.scrub(err.Error())).Msg("upstream stream ended early")
			}
			break
		}
	}
	acct.Close()
	res.usage, res.model = acct.total, acct.model
	if acct.errType != "" {
		res.upstreamErr = true
		p.log.Warn().Str("job", j.id).Str("type", acct.errType).Msg("upstream sent an error event in the stream")
	}
}

// retryable statuses: rate limit and server-side failures.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryWait decides whether attempt may be followed by another, and after how
// long: Retry-After when the upstream gave one, else exponential backoff. No
// retry when attempts or the total wait budget would be exceeded.
func (p *Proxy) retryWait(attempt int, waited time.Duration, h http.Header) (time.Duration, bool) {
	if attempt >= p.opts.MaxAttempts {
		return 0, false
	}
	wait, ok := backoff.RetryAfter(h.Get("Retry-After"), p.clock())
	if !ok {
		wait = backoff.Exponential(p.opts.BaseBackoff, DefaultMaxBackoff, attempt)
	}
	if waited+wait > p.opts.MaxRetryWait {
		return wait, false
	}
	return wait, true
}

// drain discards a small rest of a body so the connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// scrub removes the real key from text that may reach a log or the harness.
func (p *Proxy) scrub(s string) string {
	if k := p.opts.APIKey; len(k) >= 4 {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

// errClass classifies an upstream error answer for a job's stop reason
// (the class names of jobs.Model…).
func (r result) errClass() string {
	switch {
	case r.status == 0 && r.sent:
		return "stream_cut" // it answered, and its answer broke off
	case r.status == 0:
		return "unreachable"
	case r.status == http.StatusUnauthorized:
		return FaultKeyRejected
	case r.status == http.StatusPaymentRequired:
		return FaultBalance
	case r.status == http.StatusTooManyRequests:
		return "rate_limit"
	case r.status == http.StatusServiceUnavailable:
		return "overload"
	case r.status >= 500:
		return "server_error"
	}
	return "bad_request"
}

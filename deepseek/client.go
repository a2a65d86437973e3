package deepseek

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
)

// Defaults of Options fields left zero.
const (
	DefaultBaseURL         = "https://api.deepseek.com"
	DefaultModel           = "deepseek-flash"
	DefaultMaxOutputTokens = 4096
	DefaultTimeout         = 90 * time.Second
	DefaultMaxAttempts     = 6
	DefaultRetryBackoff    = 500 * time.Millisecond
	maxRetryBackoff        = 8 * time.Second
	maxErrorBody           = 64 << 10
	maxToolCalls           = 128
)

// Options configure a Client.
type Options struct {
	BaseURL         string // OpenAI-compatible base, no /v1 (default https://api.deepseek.com)
	APIKey          string // empty: every call fails with ErrNoAPIKey, no HTTP call
	Model           string // default deepseek-flash
	MaxOutputTokens int    // max_tokens: reasoning and answer share it (default 4096); it also sets OutputCap
	Timeout         time.Duration
	HTTPClient      *http.Client // default: a client without its own timeout (the ctx bounds calls)
	Logger          *zerolog.Logger

	// MaxAttempts bounds HTTP attempts per call, retries included (default 6).
	MaxAttempts int
	// RetryBackoff is the first wait before a retry without Retry-After; it
	// doubles up to 8 s (default 500 ms).
	RetryBackoff time.Duration
	// Price prices a model's usage (nil: PriceFor).
	Price func(model string) Price
}

// String hides the key so Options can be logged or printed safely.
func (o Options) String() string {
	key := "unset"
	if o.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("deepseek.Options{BaseURL:%q Model:%q MaxOutputTokens:%d Timeout:%s APIKey:%s}",
		o.BaseURL, o.Model, o.MaxOutputTokens, o.Timeout, key)
}

// GoString hides the key from %#v.
func (o Options) GoString() string { return o.String() }

// Client calls DeepSeek's chat completions API. Safe for concurrent use.
type Client struct {
	o   Options
	url string
	hc  *http.Client
	log zerolog.Logger
}

// NewClient fills the defaults of o.
func NewClient(o Options) *Client {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.MaxOutputTokens <= 0 {
		o.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.Price == nil {
		o.Price = PriceFor
	}
	c := &Client{o: o, url: o.BaseURL + "/chat/completions", hc: o.HTTPClient, log: zerolog.Nop()}
	if c.hc == nil {
		// Keep enough idle connections for concurrent flash calls: the default
		// transport keeps 2 per host, so a burst re-dialled (and re-handshook)
		// DeepSeek on almost every call (measured by make bench).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: tr}
	}
	if o.Logger != nil {
		c.log = o.Logger.With().Str("component", "deepseek").Logger()
	}
	return c
}

// Model is the model id calls use.
func (c *Client) Model() string { return c.o.Model }

// Flash sends one task and returns the answer. Blank answers are retried once;
// 429, 5xx, connection failures and broken streams are retried with backoff
// (honouring Retry-After) as long as the Timeout allows. A stream that passes
// OutputCap ends the call with ErrOverOutputCap, unretried. On error the result
// still carries Attempts, Duration and the Usage and CostUSD of whatever the
// API billed. Errors wrap the package sentinels.
func (c *Client) Flash(ctx context.Context, req FlashRequest) (FlashResult, error) {
	start := time.Now()
	model := c.o.Model
	if req.Model != "" {
		model = req.Model
	}
	res := FlashResult{Model: model, Thinking: req.Thinking}
	if res.Thinking == "" {
		res.Thinking = DefaultThinking
	}
	finish := func(err error) (FlashResult, error) {
		res.Duration = time.Since(start)
		res.CostUSD = cost(c.o.Price(res.Model), res.Usage)
		return res, err
	}
	if c.o.APIKey == "" {
		return finish(ErrNoAPIKey)
	}
	msgs, err := flashMessages(req)
	if err != nil {
		return finish(err)
	}
	thinking, effort := thinkingFields(req.Thinking)
	cr := chatRequest{
		Model:           model,
		Messages:        msgs,
		MaxTokens:       c.o.MaxOutputTokens,
		Stream:          true,
		StreamOptions:   &streamOptions{IncludeUsage: true},
		Thinking:        thinking,
		ReasoningEffort: effort,
	}
	if req.JSON {
		cr.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	body, err := json.Marshal(cr)
	if err != nil {
		return finish(fmt.Errorf("encode request: %w", err))
	}

	callCtx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	deadline, _ := callCtx.Deadline()
	p := &progress{fn: req.Progress}
	retries, blanks := 0, 0
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		t, err := c.attempt(callCtx, body, attempt, p)
		res.Usage.add(t.usage)
		if t.model != "" {
			res.Model = t.model
		}
		if err != nil {
			if cerr := c.contextError(ctx, callCtx, start, attempt); cerr != nil {
				return finish(cerr)
			}
			if !errors.Is(err, ErrUpstream) && !errors.Is(err, ErrRateLimited) || errors.Is(err, ErrOverOutputCap) {
				c.log.Warn().Int("attempt", attempt).Err(err).Msg("deepseek call failed")
				return finish(err)
			}
			wait := backoff.Exponential(c.o.RetryBackoff, maxRetryBackoff, retries+1)
			var apiErr *APIError
			if errors.As(err, &apiErr) && apiErr.RetryAfterSeconds > 0 {
				wait = time.Duration(apiErr.RetryAfterSeconds) * time.Second
			}
			if attempt >= c.o.MaxAttempts {
				return finish(fmt.Errorf("%w (gave up after %d attempts; try again later)", err, attempt))
			}
			if time.Now().Add(wait).After(deadline) {
				return finish(fmt.Errorf("%w (gave up after %d attempts: waiting %s more would pass the %s deadline, DEEPSEEK_TIMEOUT_MS)",
					err, attempt, wait.Round(time.Millisecond), c.o.Timeout))
			}
			c.log.Info().Int("attempt", attempt).Dur("wait", wait).Err(err).Msg("deepseek call failed, retrying")
			p.emit(PhaseRetrying, fmt.Sprintf("attempt %d failed (%v); retrying in %s", attempt, err, wait.Round(time.Millisecond)))
			if !backoff.Sleep(callCtx, wait) {
				return finish(c.contextError(ctx, callCtx, start, attempt))
			}
			retries++
			continue
		}
		if t.blank() {
			blanks++
			if blanks == 1 {
				c.log.Info().Int("attempt", attempt).Str("finish_reason", t.finish).Msg("deepseek returned a blank answer, retrying once")
				p.emit(PhaseRetrying, fmt.Sprintf("blank answer (finish_reason: %s); retrying once", t.finish))
				continue
			}
			res.FinishReason = t.finish
			return finish(c.blankError(t.finish))
		}
		res.Answer = t.content.String()
		res.FinishReason = t.finish
		res.ToolCalls = t.toolCalls
		if strings.TrimSpace(res.Answer) == "" && len(t.toolCalls) > 0 {
			res.Answer = toolCallNote(t.toolCalls)
		}
		c.log.Debug().Int("attempts", attempt).Str("finish_reason", t.finish).
			Int64("completion_tokens", res.Usage.CompletionTokens).Msg("deepseek call done")
		return finish(nil)
	}
}

// contextError tells a caller's cancel from the call's own deadline; nil
// while both are live.
func (c *Client) contextError(parent, call context.Context, start time.Time, attempt int) error {
	if parent.Err() != nil {
		return fmt.Errorf("%w after %s (attempt %d): %v", ErrCanceled, time.Since(start).Round(time.Millisecond), attempt, context.Cause(parent))
	}
	if call.Err() != nil {
		return fmt.Errorf("%w of %s (DEEPSEEK_TIMEOUT_MS; attempt %d): raise DEEPSEEK_TIMEOUT_MS, lower DEEPSEEK_MAX_OUTPUT_TOKENS or split the task",
			ErrTimeout, c.o.Timeout, attempt)
	}
	return nil
}

func (c *Client) blankError(finish string) error {
	switch finish {
	case "length":
		return fmt.Errorf("%w twice (finish_reason: length): the model's reasoning used up the whole output budget of %d tokens before it wrote an answer; raise DEEPSEEK_MAX_OUTPUT_TOKENS or split the task into smaller pieces",
			ErrBlankAnswer, c.o.MaxOutputTokens)
	case "content_filter":
		return fmt.Errorf("%w twice (finish_reason: content_filter): DeepSeek's content filter withheld the answer; rephrase the task or leave out the material that triggers it", ErrBlankAnswer)
	case "insufficient_system_resource":
		return fmt.Errorf("%w twice (finish_reason: insufficient_system_resource): DeepSeek ran out of capacity; try again later", ErrBlankAnswer)
	}
	return fmt.Errorf("%w twice (finish_reason: %s); with finish_reason length this means reasoning used up the output budget (raise DEEPSEEK_MAX_OUTPUT_TOKENS or split the task); otherwise try again or rephrase the task",
		ErrBlankAnswer, orNone(finish))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func toolCallNote(calls []ToolCall) string {
	var b strings.Builder
	b.WriteString("(DeepSeek answered with tool calls instead of text; deepseek_flash offers no tools:")
	for _, tc := range calls {
		fmt.Fprintf(&b, " %s(%s)", tc.Name, tc.Arguments)
	}
	b.WriteString(")")
	return b.String()
}

func cost(p Price, u Usage) float64 {
	hit, miss := u.CacheHitTokens, u.CacheMissTokens
	if hit+miss == 0 {
		miss = u.PromptTokens
	}
	return p.Cost(hit, miss, u.CompletionTokens)
}

// attempt is one HTTP request.
func (c *Client) attempt(ctx context.Context, body []byte, n int, p *progress) (*turn, error) {
	t := &turn{maxTokens: c.o.MaxOutputTokens}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return t, fmt.Errorf("%w: bad DEEPSEEK_BASE_URL %q: %v", ErrBadRequest, withoutUserinfo(c.o.BaseURL), unwrapURLError(err)) // url.Error repeats the URL
	}
	hreq.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	p.emit(PhaseWaiting, fmt.Sprintf("waiting for DeepSeek (attempt %d)", n))
	sent := time.Now()
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return t, fmt.Errorf("%w: could not reach DeepSeek at %s (check DEEPSEEK_BASE_URL and the network): %v", ErrUpstream, withoutUserinfo(c.o.BaseURL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	c.log.Debug().Int("attempt", n).Int("status", resp.StatusCode).Dur("ttfb", time.Since(sent)).Msg("deepseek response")
	if resp.StatusCode != http.StatusOK {
		return t, readAPIError(resp)
	}
	// An OpenAI-compatible gateway may answer stream: true with one
	// chat.completion body: its content type says which it sent.
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		return t, t.readWhole(resp.Body, p)
	}
	return t, t.readStream(resp.Body, p)
}

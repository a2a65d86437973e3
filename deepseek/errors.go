package deepseek

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
)

// Sentinels for errors.Is. Every error Flash returns wraps exactly one of them
// (a give-up after retries wraps the class of the last failure), besides
// ErrUpstream under ErrOverOutputCap.
var (
	ErrNoAPIKey            = errors.New("no DeepSeek API key is configured: set DEEPSEEK_API_KEY (in the environment or .env) and restart the bridge")
	ErrKeyRejected         = errors.New("DeepSeek rejected the API key (401): check DEEPSEEK_API_KEY")
	ErrInsufficientBalance = errors.New("DeepSeek reports insufficient balance (402): top up the account at platform.deepseek.com")
	ErrBadRequest          = errors.New("DeepSeek rejected the request")
	ErrRateLimited         = errors.New("DeepSeek is rate limiting requests (429)")
	ErrUpstream            = errors.New("DeepSeek had a server or connection problem")
	ErrTimeout             = errors.New("the DeepSeek call did not finish within its deadline")
	ErrCanceled            = errors.New("the DeepSeek call was cancelled by the caller")
	ErrBlankAnswer         = errors.New("DeepSeek returned a blank answer")
	ErrInvalidRequest      = errors.New("invalid flash request")

	// ErrOverOutputCap is the one sentinel that wraps another: an upstream
	// that streamed more than max_tokens can produce (OutputCap) is a broken
	// upstream, so it is an ErrUpstream, but it is not retried — the next
	// attempt would cost as much and most likely do the same.
	ErrOverOutputCap = fmt.Errorf("%w: the upstream sent more than the output cap allows", ErrUpstream)
)

// APIError is an HTTP error answer of the API. It unwraps to the sentinel of
// its status (401 ErrKeyRejected, 402 ErrInsufficientBalance, 400/422/other
// 4xx ErrBadRequest, 429 ErrRateLimited, 5xx ErrUpstream).
type APIError struct {
	Status  int
	Message string // the API's error.message
	Type    string // error.type
	Code    string // error.code
	// RetryAfterSeconds is the Retry-After header (0 when absent).
	RetryAfterSeconds int
}

func (e *APIError) Error() string {
	switch e.Status {
	case 401:
		return ErrKeyRejected.Error()
	case 402:
		return ErrInsufficientBalance.Error()
	case 400, 422:
		return fmt.Sprintf("DeepSeek rejected the request (%d): %s", e.Status, e.apiMessage())
	case 404:
		return fmt.Sprintf("DeepSeek answered 404 (%s): check DEEPSEEK_BASE_URL (the OpenAI-compatible base, e.g. https://api.deepseek.com, without /v1)", e.apiMessage())
	case 429:
		return fmt.Sprintf("DeepSeek is rate limiting requests (429): %s; wait a little and try again", e.apiMessage())
	case 500:
		return fmt.Sprintf("DeepSeek had a server error (500): %s; try again shortly", e.apiMessage())
	case 503:
		return fmt.Sprintf("DeepSeek is overloaded (503): %s; try again shortly", e.apiMessage())
	}
	if e.Status >= 500 {
		return fmt.Sprintf("DeepSeek answered HTTP %d: %s; try again shortly", e.Status, e.apiMessage())
	}
	return fmt.Sprintf("DeepSeek rejected the request (HTTP %d): %s", e.Status, e.apiMessage())
}

func (e *APIError) apiMessage() string {
	if e.Message == "" {
		return "no error message in the response"
	}
	return e.Message
}

// Unwrap returns the sentinel of the status.
func (e *APIError) Unwrap() error {
	switch {
	case e.Status == 401:
		return ErrKeyRejected
	case e.Status == 402:
		return ErrInsufficientBalance
	case e.Status == 429:
		return ErrRateLimited
	case e.Status >= 500:
		return ErrUpstream
	default:
		return ErrBadRequest
	}
}

// retryable reports whether the status is worth another attempt.
func (e *APIError) retryable() bool {
	return e.Status == 429 || e.Status >= 500
}

// withoutUserinfo drops credentials (user:pass@) from a URL before it goes
// into an error text, which reaches MCP clients as a tool result.
func withoutUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if at := strings.LastIndex(raw, "@"); err != nil && at >= 0 {
			if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
				return raw[:scheme+3] + "…@" + raw[at+1:]
			}
		}
		return raw
	}
	u.User = nil
	return u.String()
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

func readAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		e.Message, e.Type = body.Error.Message, body.Error.Type
		if body.Error.Code != nil {
			e.Code = fmt.Sprint(body.Error.Code)
		}
	} else if s := strings.TrimSpace(string(raw)); s != "" {
		e.Message = truncate(s, 300)
	}
	if d, ok := backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
		e.RetryAfterSeconds = max(1, int((d+time.Second/2)/time.Second))
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

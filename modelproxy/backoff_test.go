package modelproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// scriptedTransport answers upstream calls in memory, one scripted response
// per call, so backoff runs on synctest's fake clock.
type scriptedTransport struct {
	mu    sync.Mutex
	resps []func() *http.Response
	calls []time.Time
}

func (s *scriptedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, time.Now())
	if len(s.resps) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	f := s.resps[0]
	s.resps = s.resps[1:]
	resp := f()
	resp.Request = r
	return resp, nil
}

func status(code int, retryAfter string) func() *http.Response {
	return func() *http.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Header: h,
			Body: io.NopCloser(strings.NewReader(`{"error":{"message":"` + http.StatusText(code) + `"}}`))}
	}
}

func okJSON() *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"type":"message","usage":{"input_tokens":10,"output_tokens":2}}`))}
}

func TestBackoffTiming(t *testing.T) {
	httpDate := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }
	cases := []struct {
		name         string
		opts         Options
		script       func() []func() *http.Response // built inside the bubble (fake clock)
		wantStatus   int
		wantElapsed  time.Duration
		wantAttempts int
	}{
		{
			name:       "Retry-After seconds honoured",
			script:     func() []func() *http.Response { return []func() *http.Response{status(429, "7"), okJSON} },
			wantStatus: 200, wantElapsed: 7 * time.Second, wantAttempts: 2,
		},
		{
			name: "Retry-After as an HTTP date",
			script: func() []func() *http.Response {
				return []func() *http.Response{status(503, httpDate(5*time.Second)), okJSON}
			},
			wantStatus: 200, wantElapsed: 5 * time.Second, wantAttempts: 2,
		},
		{
			name: "exponential backoff without Retry-After",
			script: func() []func() *http.Response {
				return []func() *http.Response{status(500, ""), status(502, ""), status(503, ""), okJSON}
			},
			wantStatus: 200, wantElapsed: (1 + 2 + 4) * time.Second, wantAttempts: 4,
		},
		{
			name: "attempts bounded: the last 503 goes to the harness",
			script: func() []func() *http.Response {
				return []func() *http.Response{status(503, ""), status(503, ""), status(503, ""), status(503, ""), okJSON}
			},
			wantStatus: 503, wantElapsed: (1 + 2 + 4) * time.Second, wantAttempts: 4,
		},
		{
			name:       "Retry-After beyond the wait budget is not waited for",
			script:     func() []func() *http.Response { return []func() *http.Response{status(429, "120"), okJSON} },
			wantStatus: 429, wantElapsed: 0, wantAttempts: 1,
		},
		{
			name: "total wait budget",
			opts: Options{MaxRetryWait: 10 * time.Second},
			script: func() []func() *http.Response {
				return []func() *http.Response{status(429, "6"), status(429, "6"), okJSON}
			},
			wantStatus: 429, wantElapsed: 6 * time.Second, wantAttempts: 2,
		},
		{
			name:       "no retry on 4xx",
			script:     func() []func() *http.Response { return []func() *http.Response{status(422, ""), okJSON} },
			wantStatus: 422, wantElapsed: 0, wantAttempts: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &scriptedTransport{resps: c.script()}
				o := c.opts
				o.Upstream, o.APIKey, o.Model = "http://127.0.0.1:9/anthropic", testKey, testModel
				o.HTTPClient = &http.Client{Transport: tr}
				p, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				p.url = "http://127.0.0.1:1" // handler-only: no listener in the bubble
				_, token, err := p.Open("job-1")
				if err != nil {
					t.Fatal(err)
				}
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/messages", strings.NewReader(msgBody))
				req.RemoteAddr = "127.0.0.1:5000"
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				start := time.Now()
				p.ServeHTTP(rec, req)
				if el := time.Since(start); el != c.wantElapsed {
					t.Errorf("elapsed %v, want %v", el, c.wantElapsed)
				}
				if rec.Code != c.wantStatus {
					t.Errorf("status %d, want %d; body %q", rec.Code, c.wantStatus, rec.Body)
				}
				if len(tr.calls) != c.wantAttempts {
					t.Errorf("%d attempts, want %d", len(tr.calls), c.wantAttempts)
				}
				u, _ := p.Usage("job-1")
				if u.Retries != int64(c.wantAttempts-1) {
					t.Errorf("retries %d, want %d", u.Retries, c.wantAttempts-1)
				}
				if c.wantStatus == 200 && (u.InputTokens != 10 || u.OutputTokens != 2) {
					t.Errorf("usage %+v", u)
				}
			})
		})
	}
}

// TestCloseDuringBackoff: a job closed while the proxy waits to retry ends
// the wait at once; the harness is told its token is gone.
func TestCloseDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &scriptedTransport{resps: []func() *http.Response{status(429, "30"), okJSON}}
		p, err := New(Options{Upstream: "http://127.0.0.1:9", APIKey: testKey, Model: testModel, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		p.url = "http://127.0.0.1:1"
		_, token, _ := p.Open("job-1")
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/messages", strings.NewReader(msgBody))
		req.RemoteAddr = "127.0.0.1:5000"
		req.Header.Set("x-api-key", token)
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		start := time.Now()
		go func() { defer close(done); p.ServeHTTP(rec, req) }()
		synctest.Wait() // the handler now sleeps in its backoff
		if _, err := p.Close("job-1"); err != nil {
			t.Fatal(err)
		}
		<-done
		if el := time.Since(start); el != 0 {
			t.Fatalf("the backoff went on for %v after Close", el)
		}
		if rec.Code != http.StatusUnauthorized || len(tr.calls) != 1 {
			t.Fatalf("status %d after %d attempts", rec.Code, len(tr.calls))
		}
	})
}

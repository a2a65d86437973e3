package modelproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func TestTokenLifecycle(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")
	if len(token) < len("bridge-job-")+22 { // 128 bits in base64 is 22 characters
		t.Fatalf("token %q is too short for 128 bits", token)
	}
	_, other, err := p.Open("job-2")
	if err != nil || other == token {
		t.Fatalf("second job: token %q err %v; want a distinct token", other, err)
	}

	t.Run("valid token", func(t *testing.T) {
		for _, header := range []string{"bearer", "x-api-key"} {
			a := call(t, p, "/v1/messages", header, token, msgBody)
			if a.status != http.StatusOK || !strings.Contains(a.body, "event: message_stop") {
				t.Fatalf("%s: status %d body %q; want 200 with the stream", header, a.status, a.body)
			}
		}
	})

	cases := []struct {
		name, header, token, wantMsg string
	}{
		{"missing", "", "", "missing job token"},
		{"wrong bearer", "bearer", "bridge-job-not-a-real-token", "invalid, expired or revoked"},
		{"wrong x-api-key", "x-api-key", "bridge-job-not-a-real-token", "invalid, expired or revoked"},
		{"the real key itself", "bearer", testKey, "invalid, expired or revoked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(up.requests())
			a := call(t, p, "/v1/messages", c.header, c.token, msgBody)
			if a.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401; body %q", a.status, a.body)
			}
			if typ, msg := anthropicError(t, a.body); typ != "authentication_error" || !strings.Contains(msg, c.wantMsg) {
				t.Fatalf("error %s %q, want authentication_error containing %q", typ, msg, c.wantMsg)
			}
			if n := len(up.requests()); n != before {
				t.Fatalf("a refused request reached the upstream (%d → %d)", before, n)
			}
		})
	}

	t.Run("revoked by Close", func(t *testing.T) {
		if _, err := p.Close("job-1"); err != nil {
			t.Fatalf("Close: %v", err)
		}
		a := call(t, p, "/v1/messages", "bearer", token, msgBody)
		if a.status != http.StatusUnauthorized {
			t.Fatalf("revoked token: status %d, want 401", a.status)
		}
		if typ, _ := anthropicError(t, a.body); typ != "authentication_error" {
			t.Fatalf("revoked token: error type %s", typ)
		}
		if _, err := p.Close("job-1"); !errors.Is(err, ErrUnknownJob) {
			t.Fatalf("second Close: %v, want ErrUnknownJob", err)
		}
		if _, ok := p.Usage("job-1"); ok {
			t.Fatal("Usage of a closed job still answers")
		}
		// The other job is untouched.
		if a := call(t, p, "/v1/messages", "bearer", other, msgBody); a.status != http.StatusOK {
			t.Fatalf("job-2 after job-1 closed: status %d", a.status)
		}
	})

	t.Run("upstream sees the real key only", func(t *testing.T) {
		reqs := up.requests()
		if len(reqs) == 0 {
			t.Fatal("no upstream request")
		}
		for _, r := range reqs {
			if got := r.Header.Get("X-Api-Key"); got != testKey {
				t.Errorf("upstream x-api-key = %q, want the real key", got)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("upstream Authorization = %q, want the real key", got)
			}
			for k, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, "bridge-job-") {
						t.Errorf("upstream header %s carries a job token", k)
					}
				}
			}
			if r.Path != "/anthropic/v1/messages" {
				t.Errorf("upstream path %q", r.Path)
			}
			if r.Header.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("anthropic-version not forwarded: %v", r.Header)
			}
		}
	})
}

func TestOpenErrors(t *testing.T) {
	p, err := New(Options{Upstream: "http://127.0.0.1:9/anthropic", APIKey: testKey, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Open("job-1"); !errors.Is(err, ErrNotListening) {
		t.Fatalf("Open before Listen: %v, want ErrNotListening", err)
	}
	if err := p.Listen(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(t.Context()) })
	if _, _, err := p.Open("job-1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Open("job-1"); !errors.Is(err, ErrJobOpen) {
		t.Fatalf("second Open: %v, want ErrJobOpen", err)
	}
	if _, _, err := p.Open(""); err == nil {
		t.Fatal("Open with an empty id succeeded")
	}

	for _, o := range []Options{
		{Upstream: "http://127.0.0.1:9", Model: testModel},                   // no key
		{Upstream: "ftp://x", APIKey: testKey},                               // not http
		{Upstream: "http://127.0.0.1:9", APIKey: testKey, JobMaxCostUSD: -1}, // negative ceiling
		{Upstream: "", APIKey: testKey},                                      // no upstream
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
	if _, err := New(Options{Upstream: "http://127.0.0.1:9"}); !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Errorf("no key: %v", err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")

	cases := []struct {
		remote     string
		wantStatus int
	}{
		{"203.0.113.7:40000", http.StatusForbidden},
		{"192.168.1.20:40000", http.StatusForbidden},
		{"[2001:db8::1]:40000", http.StatusForbidden},
		{"garbage", http.StatusForbidden},
		{"127.0.0.1:40000", http.StatusOK},
		{"[::1]:40000", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.remote, func(t *testing.T) {
			before := len(up.requests())
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/messages", strings.NewReader(msgBody))
			req.RemoteAddr = c.remote
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			p.Handler().ServeHTTP(rec, req)
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d, want %d; body %q", rec.Code, c.wantStatus, rec.Body)
			}
			if c.wantStatus == http.StatusForbidden {
				if typ, msg := anthropicError(t, rec.Body.String()); typ != "permission_error" || !strings.Contains(msg, "loopback") {
					t.Fatalf("error %s %q", typ, msg)
				}
				if len(up.requests()) != before {
					t.Fatal("a non-loopback request reached the upstream")
				}
			}
		})
	}

	t.Run("Listen refuses a public address", func(t *testing.T) {
		q, err := New(Options{Upstream: up.URL, APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
			if err := q.Listen(t.Context(), addr); !errors.Is(err, ErrNotLoopback) {
				t.Errorf("Listen(%q) = %v, want ErrNotLoopback", addr, err)
			}
		}
		if q.URL() != "" {
			t.Fatalf("URL after refused Listen: %q", q.URL())
		}
	})
}

func TestRoutes(t *testing.T) {
	up := newUpstream(t,
		statusTurn(http.StatusOK, nil, `{"input_tokens":42}`),
		sseTurn(usageBlock{Input: 10, Output: 1}, 5, "ok"),
	)
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")

	t.Run("count_tokens is forwarded, not billed", func(t *testing.T) {
		a := call(t, p, "/v1/messages/count_tokens", "bearer", token, `{"model":"deepseek-flash","messages":[]}`)
		if a.status != http.StatusOK || a.body != `{"input_tokens":42}` {
			t.Fatalf("count_tokens: %d %q", a.status, a.body)
		}
		if u, _ := p.Usage("job-1"); u.TotalTokens() != 0 {
			t.Fatalf("count_tokens was billed: %+v", u)
		}
	})
	t.Run("query string preserved", func(t *testing.T) {
		a := call(t, p, "/v1/messages?beta=true", "bearer", token, msgBody)
		if a.status != http.StatusOK {
			t.Fatalf("status %d", a.status)
		}
		reqs := up.requests()
		last := reqs[len(reqs)-1]
		if last.Path != "/anthropic/v1/messages" || last.Query != "beta=true" {
			t.Fatalf("upstream got %s?%s", last.Path, last.Query)
		}
		if string(last.Body) != msgBody {
			t.Fatalf("body changed on the way: %q", last.Body)
		}
	})

	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/messages"},
		{http.MethodPost, "/v1/complete"},
		{http.MethodPost, "/mcp/test-secret-0123456789abcdef"},
		{http.MethodGet, "/"},
		{http.MethodPost, "/v1/models"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			before := len(up.requests())
			req, _ := http.NewRequestWithContext(t.Context(), c.method, p.URL()+c.path, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&b)
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status %d, want 404", resp.StatusCode)
			}
			if typ, _ := anthropicError(t, b.String()); typ != "not_found_error" {
				t.Fatalf("error type %s", typ)
			}
			if len(up.requests()) != before {
				t.Fatal("an unknown route reached the upstream")
			}
		})
	}
}

// TestStreamingPassThrough proves there is no buffering: the client reads the
// first event while the upstream is still held back before its last.
func TestStreamingPassThrough(t *testing.T) {
	firstRead := make(chan struct{})
	upstreamDone := make(chan struct{})
	events := turnEvents(usageBlock{Input: 100, Output: 1}, 20, "hello")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		sseHeaders(w)
		writeEvent(w, events[0])
		select { // hold the rest until the client has seen the first event
		case <-firstRead:
		case <-r.Context().Done():
			return
		}
		for _, e := range events[1:] {
			writeEvent(w, e)
		}
	})
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/v1/messages?beta=true", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	var first []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the first event (buffered proxy?): %v", err)
		}
		if line == "\n" {
			break
		}
		first = append(first, line)
	}
	select {
	case <-upstreamDone:
		t.Fatal("the upstream finished before the client read the first event")
	default:
	}
	if len(first) != 2 || first[0] != "event: message_start\n" {
		t.Fatalf("first event: %q", first)
	}
	close(firstRead)
	var rest strings.Builder
	if _, err := br.WriteTo(&rest); err != nil {
		t.Fatalf("rest of the stream: %v", err)
	}
	if !strings.HasSuffix(rest.String(), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("stream did not end with message_stop: %q", rest.String())
	}
	<-upstreamDone
	u, _ := p.Usage("job-1")
	if u.InputTokens != 100 || u.OutputTokens != 20 {
		t.Fatalf("usage after stream %+v", u)
	}
}

func TestUsageAndCost(t *testing.T) {
	price := deepseek.PriceFor(testModel)
	cases := []struct {
		name   string
		script []http.HandlerFunc
		want   Usage
	}{
		{
			name: "streamed, message_delta cumulative",
			script: []http.HandlerFunc{
				sseTurn(usageBlock{Input: 1200, CacheRead: 800, CacheCreation: 50, Output: 1}, 300, "a"),
				sseTurn(usageBlock{Input: 40, CacheRead: 2000, Output: 1}, 75, "b"),
			},
			// Output is the final cumulative count, never start + delta.
			want: Usage{InputTokens: 1200 + 50 + 40, CacheReadTokens: 2800, OutputTokens: 375, Requests: 2},
		},
		{
			name: "not streamed",
			script: []http.HandlerFunc{
				jsonTurn(usageBlock{Input: 500, CacheRead: 100, Output: 60}, "x"),
				jsonTurn(usageBlock{Input: 7, Output: 3}, "y"),
			},
			want: Usage{InputTokens: 507, CacheReadTokens: 100, OutputTokens: 63, Requests: 2},
		},
		{
			name: "delta repeating the input fields, and thinking tokens",
			script: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				writeEvent(w, sseEvent{"message_start", map[string]any{"type": "message_start",
					"message": map[string]any{"usage": map[string]any{"input_tokens": 90, "cache_read_input_tokens": 10, "output_tokens": 0}}}})
				io := []map[string]any{
					{"type": "message_delta", "usage": map[string]any{"output_tokens": 15}},
					{"type": "message_delta", "usage": map[string]any{"input_tokens": 90, "cache_read_input_tokens": 10,
						"output_tokens": 44, "output_tokens_details": map[string]any{"thinking_tokens": 30}}},
				}
				for _, d := range io {
					writeEvent(w, sseEvent{"message_delta", d})
				}
				writeEvent(w, sseEvent{"message_stop", map[string]any{"type": "message_stop"}})
			}},
			want: Usage{InputTokens: 90, CacheReadTokens: 10, OutputTokens: 44, ThinkingTokens: 30, Requests: 1},
		},
		{
			name: "stream cut after message_start still bills the input",
			script: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				writeEvent(w, turnEvents(usageBlock{Input: 333, Output: 1}, 0, "")[0])
				panic(http.ErrAbortHandler) // cut the connection
			}},
			want: Usage{InputTokens: 333, OutputTokens: 1, Requests: 1, LastUpstreamError: "stream_cut"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, c.script...)
			p := startProxy(t, up, Options{JobMaxCostUSD: 1})
			token := open(t, p, "job-1")
			for range c.script {
				call(t, p, "/v1/messages", "bearer", token, msgBody)
			}
			c.want.CostUSD = price.Cost(c.want.CacheReadTokens, c.want.InputTokens, c.want.OutputTokens)
			got, ok := p.Usage("job-1")
			if !ok || got != c.want {
				t.Fatalf("Usage = %+v, want %+v", got, c.want)
			}
			final, err := p.Close("job-1")
			if err != nil || final != c.want {
				t.Fatalf("Close = %+v, %v; want %+v", final, err, c.want)
			}
			if d := p.DailyUsage(); math.Abs(d.CostUSD-c.want.CostUSD) > 1e-12 || d.InputTokens != c.want.InputTokens || d.OutputTokens != c.want.OutputTokens {
				t.Fatalf("daily usage %+v, want the job's %+v", d, c.want)
			}
		})
	}
}

func TestJobCeilings(t *testing.T) {
	price := deepseek.PriceFor(testModel)
	turn := usageBlock{Input: 100_000, Output: 1}
	turnCost := price.Cost(0, 100_000, 20_000) // 0.014 + 0.0056 = $0.0196
	cases := []struct {
		name    string
		opts    Options
		wantMsg string
	}{
		{"cost", Options{JobMaxCostUSD: 0.01},
			fmt.Sprintf("budget exceeded: this job spent $%s of its $0.01 limit (BRIDGE_JOB_MAX_COST_USD)", usd(turnCost))},
		{"tokens", Options{JobMaxTokens: 50_000},
			"budget exceeded: this job used 120000 tokens of its 50000 limit (BRIDGE_JOB_MAX_TOKENS)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, sseTurn(turn, 20_000, "partial work"))
			f := newFaults()
			c.opts.OnJobFault = f.record
			p := startProxy(t, up, c.opts)
			token := open(t, p, "job-1")
			otherToken := open(t, p, "job-2")

			if a := call(t, p, "/v1/messages", "bearer", token, msgBody); a.status != http.StatusOK {
				t.Fatalf("first call (under the ceiling): %d", a.status)
			}
			for i := range 3 { // the next requests are refused, the callback fires once
				a := call(t, p, "/v1/messages?beta=true", "bearer", token, msgBody)
				if a.status != http.StatusPaymentRequired {
					t.Fatalf("call %d over the ceiling: status %d body %q", i+2, a.status, a.body)
				}
				if typ, msg := anthropicError(t, a.body); typ != "billing_error" || msg != c.wantMsg {
					t.Fatalf("refusal %s %q, want %q", typ, msg, c.wantMsg)
				}
			}
			if n := len(up.requests()); n != 1 {
				t.Fatalf("upstream saw %d requests, want 1", n)
			}
			// Another job is not affected.
			if a := call(t, p, "/v1/messages", "bearer", otherToken, msgBody); a.status != http.StatusOK {
				t.Fatalf("job-2: %d", a.status)
			}
			if err := p.Shutdown(t.Context()); err != nil { // joins every handler
				t.Fatal(err)
			}
			if got := f.list(); len(got) != 1 || got[0] != "job-1: "+c.wantMsg {
				t.Fatalf("OnJobFault calls %q, want exactly one for job-1", got)
			}
		})
	}

	t.Run("zero means no ceiling", func(t *testing.T) {
		up := newUpstream(t)
		up.fallback = sseTurn(usageBlock{Input: 10_000_000, Output: 1}, 1_000_000, "big")
		p := startProxy(t, up, Options{})
		token := open(t, p, "job-1")
		for range 3 {
			if a := call(t, p, "/v1/messages", "bearer", token, msgBody); a.status != http.StatusOK {
				t.Fatalf("status %d with no ceilings", a.status)
			}
		}
	})
}

func TestDailyCeiling(t *testing.T) {
	dir, err := statedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var clockMu sync.Mutex
	now := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	turn := sseTurn(usageBlock{Input: 1_000_000, Output: 1}, 1, "spent") // $0.14 + tiny output
	turnCost := deepseek.PriceFor(testModel).Cost(0, 1_000_000, 1)

	up := newUpstream(t)
	up.fallback = turn
	f := newFaults()
	o := Options{DailyMaxCostUSD: 0.25, StateDir: dir, Clock: clock, OnJobFault: f.record}
	p := startProxy(t, up, o)
	a1, a2 := open(t, p, "job-a"), open(t, p, "job-b")
	for _, tok := range []string{a1, a2} { // $0.28 after two jobs' calls
		if a := call(t, p, "/v1/messages", "bearer", tok, msgBody); a.status != http.StatusOK {
			t.Fatalf("status %d under the daily ceiling", a.status)
		}
	}
	wantMsg := fmt.Sprintf("budget exceeded: all jobs together spent $%s today (UTC) of the $0.25 daily limit (BRIDGE_DAILY_MAX_COST_USD); model calls resume after 00:00 UTC", usd(2*turnCost))
	a3 := open(t, p, "job-c")
	a := call(t, p, "/v1/messages", "bearer", a3, msgBody)
	if a.status != http.StatusPaymentRequired {
		t.Fatalf("over the daily ceiling: status %d", a.status)
	}
	if _, msg := anthropicError(t, a.body); msg != wantMsg {
		t.Fatalf("message %q, want %q", msg, wantMsg)
	}
	if got := <-f.ch; got != "job-c: "+wantMsg {
		t.Fatalf("fault %q", got)
	}

	var onDisk dayLedger
	path := filepath.Join(dir.Root, "spend-2026-11-29.json")
	if err := statedir.ReadJSON(path, &onDisk); err != nil {
		t.Fatalf("daily spend not persisted: %v", err)
	}
	if onDisk.Day != "2026-11-29" || math.Abs(onDisk.Usage.CostUSD-2*turnCost) > 1e-12 || onDisk.Usage.InputTokens != 2_000_000 || onDisk.Usage.Requests != 2 {
		t.Fatalf("persisted ledger %+v", onDisk)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file mode: %v %v", st.Mode(), err)
	}

	t.Run("survives a restart", func(t *testing.T) {
		q := startProxy(t, up, o)
		tok := open(t, q, "job-d")
		if a := call(t, q, "/v1/messages", "bearer", tok, msgBody); a.status != http.StatusPaymentRequired {
			t.Fatalf("after restart: status %d, want 402", a.status)
		}
	})

	t.Run("a new UTC day starts from zero", func(t *testing.T) {
		clockMu.Lock()
		now = now.Add(2 * time.Hour) // 01:00 on the 30th
		clockMu.Unlock()
		tok := open(t, p, "job-e")
		if a := call(t, p, "/v1/messages", "bearer", tok, msgBody); a.status != http.StatusOK {
			t.Fatalf("next day: status %d body %q", a.status, a.body)
		}
		if d := p.DailyUsage(); d.InputTokens != 1_000_000 {
			t.Fatalf("next day's usage %+v", d)
		}
		if _, err := os.Stat(filepath.Join(dir.Root, "spend-2026-11-30.json")); err != nil {
			t.Fatalf("next day's ledger: %v", err)
		}
	})
}

func TestUpstreamFaults(t *testing.T) {
	const balanceBody = `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`
	cases := []struct {
		name     string
		turn     http.HandlerFunc
		status   int
		errType  string
		wantMsg  string
		wantCall bool
	}{
		{"402 balance", statusTurn(http.StatusPaymentRequired, nil, balanceBody),
			http.StatusPaymentRequired, "billing_error", MsgInsufficientBalance, true},
		{"401 key", statusTurn(http.StatusUnauthorized, nil, `{"error":{"message":"Authentication Fails, Your api key: ****-key is invalid","type":"authentication_error"}}`),
			http.StatusUnauthorized, "authentication_error", MsgKeyRejected, true},
		{"400 passes through", statusTurn(http.StatusBadRequest, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}`),
			http.StatusBadRequest, "invalid_request_error", "bad model", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, c.turn)
			f := newFaults()
			p := startProxy(t, up, Options{OnJobFault: f.record, BaseBackoff: time.Millisecond})
			token := open(t, p, "job-1")
			a := call(t, p, "/v1/messages", "bearer", token, msgBody)
			if a.status != c.status {
				t.Fatalf("status %d, want %d; body %q", a.status, c.status, a.body)
			}
			if typ, msg := anthropicError(t, a.body); typ != c.errType || msg != c.wantMsg {
				t.Fatalf("error %s %q, want %s %q", typ, msg, c.errType, c.wantMsg)
			}
			if n := len(up.requests()); n != 1 {
				t.Fatalf("%d upstream attempts, want 1 (no retry)", n)
			}
			// A faulted job's next request is refused here, without the upstream.
			b := call(t, p, "/v1/messages", "bearer", token, msgBody)
			if c.wantCall && (b.status != c.status || len(up.requests()) != 1) {
				t.Fatalf("after the fault: status %d, upstream requests %d", b.status, len(up.requests()))
			}
			p.Shutdown(t.Context())
			got := f.list()
			if c.wantCall && (len(got) != 1 || got[0] != "job-1: "+c.wantMsg) {
				t.Fatalf("OnJobFault %q, want one call with %q", got, c.wantMsg)
			}
			if !c.wantCall && len(got) != 0 {
				t.Fatalf("OnJobFault called for a %d: %q", c.status, got)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	t.Run("429 then success is transparent", func(t *testing.T) {
		up := newUpstream(t,
			statusTurn(http.StatusTooManyRequests, map[string]string{"Retry-After": "0"}, `{"error":{"message":"Rate Limit Reached"}}`),
			statusTurn(http.StatusServiceUnavailable, nil, `{"error":{"message":"Server overloaded"}}`),
			sseTurn(usageBlock{Input: 10, Output: 1}, 4, "after retries"),
		)
		p := startProxy(t, up, Options{BaseBackoff: time.Millisecond})
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, msgBody)
		if a.status != http.StatusOK || !strings.Contains(a.body, "after retries") {
			t.Fatalf("status %d body %q", a.status, a.body)
		}
		if n := len(up.requests()); n != 3 {
			t.Fatalf("%d upstream attempts, want 3", n)
		}
		u, _ := p.Usage("job-1")
		if u.Retries != 2 || u.Requests != 1 || u.InputTokens != 10 || u.OutputTokens != 4 {
			t.Fatalf("usage %+v", u)
		}
		if s := p.Stats(); s.Retries != 2 || s.Requests != 1 || s.UpstreamErrors != 0 {
			t.Fatalf("stats %+v", s)
		}
	})

	t.Run("attempts are bounded, the last answer is passed on", func(t *testing.T) {
		up := newUpstream(t)
		up.fallback = statusTurn(http.StatusInternalServerError, nil, `{"type":"error","error":{"type":"api_error","message":"boom"}}`)
		p := startProxy(t, up, Options{BaseBackoff: time.Millisecond, MaxAttempts: 3})
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, msgBody)
		if a.status != http.StatusInternalServerError {
			t.Fatalf("status %d", a.status)
		}
		if _, msg := anthropicError(t, a.body); msg != "boom" {
			t.Fatalf("message %q", msg)
		}
		if a.header.Get("X-Should-Retry") != "false" {
			t.Fatalf("x-should-retry %q: the harness would retry what the proxy already retried", a.header.Get("X-Should-Retry"))
		}
		if n := len(up.requests()); n != 3 {
			t.Fatalf("%d attempts, want 3", n)
		}
		if s := p.Stats(); s.Retries != 2 || s.UpstreamErrors != 1 {
			t.Fatalf("stats %+v", s)
		}
	})

	t.Run("unreachable upstream", func(t *testing.T) {
		up := newUpstream(t)
		p := startProxy(t, up, Options{BaseBackoff: time.Millisecond, MaxAttempts: 2})
		up.Close() // nothing listens there any more
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, msgBody)
		if a.status != http.StatusBadGateway {
			t.Fatalf("status %d", a.status)
		}
		if typ, msg := anthropicError(t, a.body); typ != "api_error" || !strings.Contains(msg, "after 2 attempts") {
			t.Fatalf("error %s %q", typ, msg)
		}
	})
}

func TestCloseCancelsInFlight(t *testing.T) {
	up := newUpstream(t, stalledStream(777))
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")
	br := openStream(t, p, token)

	u, err := p.Close("job-1")
	if err != nil {
		t.Fatal(err)
	}
	if u.InputTokens != 777 || u.Requests != 1 {
		t.Fatalf("Close did not wait for the in-flight call's usage: %+v", u)
	}
	var rest strings.Builder
	br.WriteTo(&rest) // ends: Close cut the call
	if strings.Contains(rest.String(), "message_stop") {
		t.Fatalf("stream went on after Close: %q", rest.String())
	}
	if a := call(t, p, "/v1/messages", "bearer", token, msgBody); a.status != http.StatusUnauthorized {
		t.Fatalf("token after Close: %d", a.status)
	}
}

func TestKeyNeverLeaks(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("X-Api-Key"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"Incorrect API key provided: %s"}}`, r.Header.Get("X-Api-Key"))
	}
	up := newUpstream(t, echo,
		statusTurn(http.StatusUnauthorized, nil, `{"error":{"message":"key `+testKey+` rejected"}}`),
	)
	var logs syncbuf.Buffer
	logger := zerolog.New(&logs).Level(zerolog.DebugLevel)
	p := startProxy(t, up, Options{Logger: &logger, BaseBackoff: time.Millisecond})
	token := open(t, p, "job-1")

	var answers []answer
	answers = append(answers, call(t, p, "/v1/messages", "bearer", token, msgBody))   // echoing 400
	answers = append(answers, call(t, p, "/v1/messages", "bearer", token, msgBody))   // 401 upstream
	answers = append(answers, call(t, p, "/v1/messages", "bearer", "nope", msgBody))  // 401 local
	answers = append(answers, call(t, p, "/v1/nothing", "bearer", token, msgBody))    // 404
	answers = append(answers, call(t, p, "/v1/messages", "bearer", testKey, msgBody)) // the key as a token
	for i, a := range answers {
		if strings.Contains(a.body, testKey) {
			t.Errorf("answer %d body leaks the key: %q", i, a.body)
		}
		for k, vs := range a.header {
			for _, v := range vs {
				if strings.Contains(v, testKey) {
					t.Errorf("answer %d header %s leaks the key", i, k)
				}
			}
		}
	}
	if !strings.Contains(answers[0].body, "[redacted]") {
		t.Fatalf("echoed key not redacted: %q", answers[0].body)
	}
	p.Shutdown(t.Context())
	if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), token) {
		t.Fatalf("log leaks a secret:\n%s", logs.String())
	}
	if logs.String() == "" {
		t.Fatal("nothing was logged; the check above proves nothing")
	}
}

func TestBodyLimit(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up, Options{MaxRequestBody: 1024})
	token := open(t, p, "job-1")
	a := call(t, p, "/v1/messages", "bearer", token, `{"pad":"`+strings.Repeat("x", 2048)+`"}`)
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", a.status)
	}
	if typ, _ := anthropicError(t, a.body); typ != "request_too_large" {
		t.Fatalf("type %s", typ)
	}
	if len(up.requests()) != 0 {
		t.Fatal("an oversized request reached the upstream")
	}
}

func TestConcurrentJobs(t *testing.T) {
	up := newUpstream(t)
	up.fallback = sseTurn(usageBlock{Input: 100, CacheRead: 10, Output: 1}, 7, "x")
	p := startProxy(t, up, Options{})
	const jobs, calls = 4, 10
	tokens := make([]string, jobs)
	for i := range tokens {
		tokens[i] = open(t, p, fmt.Sprintf("job-%d", i))
	}
	var wg sync.WaitGroup
	for i := range jobs {
		for range calls {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(msgBody))
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				bufio.NewReader(resp.Body).WriteTo(new(strings.Builder))
				resp.Body.Close()
			})
		}
	}
	wg.Wait()
	for i := range jobs {
		u, _ := p.Usage(fmt.Sprintf("job-%d", i))
		if u.InputTokens != 100*calls || u.CacheReadTokens != 10*calls || u.OutputTokens != 7*calls || u.Requests != calls {
			t.Fatalf("job-%d usage %+v", i, u)
		}
	}
	if d := p.DailyUsage(); d.Requests != jobs*calls || d.OutputTokens != 7*jobs*calls {
		t.Fatalf("daily %+v", d)
	}
}

// TestShutdownEndsStreams: cancelling the ctx given to Listen stops the
// server and ends in-flight streams; nothing is left listening.
func TestShutdownEndsStreams(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeEvent(w, turnEvents(usageBlock{Input: 5, Output: 1}, 0, "")[0])
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	p, err := New(Options{Upstream: up.URL, APIKey: testKey, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	token := open(t, p, "job-1")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	cancel()
	var rest strings.Builder
	br.WriteTo(&rest) // returns once the proxy ended the stream
	if strings.Contains(rest.String(), "message_stop") {
		t.Fatalf("stream completed instead of ending: %q", rest.String())
	}
	if err := p.Shutdown(t.Context()); err != nil { // joins the server goroutine
		t.Fatalf("Shutdown: %v", err)
	}
	if p.URL() == "" {
		t.Fatal("URL forgotten after shutdown")
	}
	if _, err := http.Post(p.URL()+"/v1/messages", "application/json", strings.NewReader(msgBody)); err == nil {
		t.Fatal("the proxy still answers after shutdown")
	}
	if _, _, err := p.Open("job-2"); !errors.Is(err, ErrNotListening) {
		t.Fatalf("Open after shutdown: %v, want ErrNotListening", err)
	}
}

// TestFaultCallbackMayClose: the registry's Abort closes the job from inside
// OnJobFault; that must not deadlock, and the harness has the refusal before
// the callback returns.
func TestFaultCallbackMayClose(t *testing.T) {
	up := newUpstream(t, statusTurn(http.StatusPaymentRequired, nil, `{"error":{"message":"Insufficient Balance"}}`))
	var p *Proxy
	read := make(chan struct{})
	closed := make(chan error, 1)
	p = startProxy(t, up, Options{OnJobFault: func(jobID string, _ Fault) {
		<-read // the harness already holds the answer
		_, err := p.Close(jobID)
		closed <- err
	}})
	token := open(t, p, "job-1")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the refusal was held back until the callback returned: %v", err)
	}
	var b strings.Builder
	// The body was flushed whole; read exactly it (the connection stays open
	// until the handler returns).
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	b.Write(body[:n])
	if resp.StatusCode != http.StatusPaymentRequired || !strings.Contains(b.String(), MsgInsufficientBalance) {
		t.Fatalf("status %d body %q", resp.StatusCode, b.String())
	}
	close(read)
	if err := <-closed; err != nil {
		t.Fatalf("Close from the callback: %v", err)
	}
	resp.Body.Close()
	if a := call(t, p, "/v1/messages", "bearer", token, msgBody); a.status != http.StatusUnauthorized {
		t.Fatalf("after Close: %d", a.status)
	}
}

func TestHopByHopHeadersStripped(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t, up, Options{})
	token := open(t, p, "job-1")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL()+"/v1/messages?beta=true", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Connection", "X-Hop-Only")
	req.Header.Set("X-Hop-Only", "private")
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Cookie", "session=1")
	req.Header.Set("Anthropic-Beta", "claude-code-20250219")
	req.Header.Set("X-Stainless-Retry-Count", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).WriteTo(new(strings.Builder))
	resp.Body.Close()
	h := up.requests()[0].Header
	for _, gone := range []string{"X-Hop-Only", "Proxy-Authorization", "Cookie"} {
		if v := h.Get(gone); v != "" {
			t.Errorf("%s forwarded: %q", gone, v)
		}
	}
	for k, want := range map[string]string{"Anthropic-Beta": "claude-code-20250219", "X-Stainless-Retry-Count": "0", "Accept-Encoding": "identity"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

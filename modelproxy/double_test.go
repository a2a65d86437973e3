package modelproxy

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// These tests run the proxy against the project's DeepSeek double instead of
// the small scripted upstream of the other tests.

// toolBody carries tools, so the double answers it from the scripted queue
// (requests without tools are the harness's side requests).
func toolBody(stream bool) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"deepseek-flash","max_tokens":256,"stream":` + s + `,` +
		`"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],` +
		`"messages":[{"role":"user","content":"list the files"}]}`
}

func startWithDouble(t *testing.T, d *deepseektest.Server, o Options) *Proxy {
	t.Helper()
	o.Upstream = d.URL() + "/anthropic"
	if o.APIKey == "" {
		o.APIKey = d.Key()
	}
	o.Model = testModel
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(t.Context()) })
	return p
}

func newDouble(t *testing.T, opts ...deepseektest.Option) *deepseektest.Server {
	d := deepseektest.New(opts...)
	t.Cleanup(d.Close)
	return d
}

func TestWithDoubleUsageMatchesScriptedUsage(t *testing.T) {
	d := newDouble(t)
	turns := []deepseektest.Usage{
		{InputTokens: 12_000, CacheHitTokens: 9_000, OutputTokens: 400, ReasoningTokens: 150},
		{InputTokens: 12_600, CacheHitTokens: 12_000, OutputTokens: 90},
		{InputTokens: 13_000, CacheHitTokens: 0, OutputTokens: 1_000},
	}
	d.ScriptAnthropic(
		deepseektest.Reasoned("think", "").WithUsage(turns[0]).WithKeepAlives(2),
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]string{"command": "ls"})).WithUsage(turns[1]),
		deepseektest.Text("done").WithUsage(turns[2]),
	)
	p := startWithDouble(t, d, Options{})
	token := open(t, p, "job-1")
	for i, stream := range []bool{true, true, false} {
		a := call(t, p, "/v1/messages?beta=true", "bearer", token, toolBody(stream))
		if a.status != http.StatusOK {
			t.Fatalf("turn %d: status %d body %q", i, a.status, a.body)
		}
	}
	// A side request (no tools) and count_tokens go through too.
	if a := call(t, p, "/v1/messages", "bearer", token, msgBody); a.status != http.StatusOK {
		t.Fatalf("side request: %d %q", a.status, a.body)
	}
	if a := call(t, p, "/v1/messages/count_tokens", "x-api-key", token, `{"model":"deepseek-flash","messages":[{"role":"user","content":"x"}]}`); a.status != http.StatusOK || !strings.Contains(a.body, "input_tokens") {
		t.Fatalf("count_tokens: %d %q", a.status, a.body)
	}

	var want Usage
	for _, u := range turns {
		want.InputTokens += u.InputTokens - u.CacheHitTokens
		want.CacheReadTokens += u.CacheHitTokens
		want.OutputTokens += u.OutputTokens
	}
	// The side request's usage is whatever the double estimated; read it back
	// from the double's answer rather than guessing.
	side := d.AnthropicRequests()
	if len(side) != 5 {
		t.Fatalf("double saw %d requests, want 5", len(side))
	}
	got, _ := p.Usage("job-1")
	sideIn := got.InputTokens - want.InputTokens
	sideOut := got.OutputTokens - want.OutputTokens
	if sideIn <= 0 || sideOut <= 0 || got.CacheReadTokens != want.CacheReadTokens {
		t.Fatalf("usage %+v, scripted part %+v", got, want)
	}
	if got.Requests != 5 {
		t.Fatalf("requests %d, want 5 (4 messages + count_tokens)", got.Requests)
	}
	wantCost := deepseek.PriceFor(testModel).Cost(got.CacheReadTokens, got.InputTokens, got.OutputTokens)
	if math.Abs(got.CostUSD-wantCost) > 1e-12 {
		t.Fatalf("cost %v, want %v", got.CostUSD, wantCost)
	}
	for _, r := range d.AnthropicRequests() {
		if r.Header.Get("Authorization") != "Bearer "+d.Key() || r.Header.Get("X-Api-Key") != d.Key() {
			t.Fatalf("double got headers %v", r.Header)
		}
	}
}

func TestWithDoubleScriptedTurnsExactly(t *testing.T) {
	d := newDouble(t)
	u := deepseektest.Usage{InputTokens: 5_000, CacheHitTokens: 1_000, OutputTokens: 700}
	d.ScriptAnthropic(deepseektest.Text("a").WithUsage(u), deepseektest.Text("b").WithUsage(u))
	p := startWithDouble(t, d, Options{})
	token := open(t, p, "job-1")
	call(t, p, "/v1/messages", "bearer", token, toolBody(true))
	call(t, p, "/v1/messages", "bearer", token, toolBody(false))
	got, err := p.Close("job-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{InputTokens: 8_000, CacheReadTokens: 2_000, OutputTokens: 1_400, Requests: 2}
	want.CostUSD = deepseek.PriceFor(testModel).Cost(2_000, 8_000, 1_400)
	if got != want {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}

func TestWithDoubleFaults(t *testing.T) {
	t.Run("429 with Retry-After then success", func(t *testing.T) {
		d := newDouble(t)
		d.ScriptAnthropic(deepseektest.RateLimited(1), deepseektest.Error(503), deepseektest.Text("after the wait"))
		p := startWithDouble(t, d, Options{BaseBackoff: 10 * time.Millisecond})
		token := open(t, p, "job-1")
		start := time.Now()
		a := call(t, p, "/v1/messages", "bearer", token, toolBody(true))
		if a.status != http.StatusOK || !strings.Contains(a.body, `"text":"after `) || !strings.Contains(a.body, "message_stop") {
			t.Fatalf("status %d body %q", a.status, a.body)
		}
		if el := time.Since(start); el < time.Second {
			t.Fatalf("answered after %v: Retry-After: 1 was not honoured", el)
		}
		u, _ := p.Usage("job-1")
		if u.Retries != 2 || p.Stats().Retries != 2 {
			t.Fatalf("retries: job %d, proxy %d; want 2", u.Retries, p.Stats().Retries)
		}
	})

	t.Run("402 ends the job with the balance message", func(t *testing.T) {
		d := newDouble(t)
		d.ScriptAnthropic(deepseektest.Error(402))
		f := newFaults()
		p := startWithDouble(t, d, Options{OnJobFault: f.record})
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, toolBody(true))
		if a.status != http.StatusPaymentRequired {
			t.Fatalf("status %d", a.status)
		}
		if typ, msg := anthropicError(t, a.body); typ != "billing_error" || msg != MsgInsufficientBalance {
			t.Fatalf("error %s %q", typ, msg)
		}
		if got := <-f.ch; got != "job-1: "+MsgInsufficientBalance || !strings.Contains(got, "insufficient balance") {
			t.Fatalf("fault %q", got)
		}
	})

	t.Run("a key the double rejects", func(t *testing.T) {
		d := newDouble(t)
		f := newFaults()
		p := startWithDouble(t, d, Options{APIKey: "sk-test-wrong-key-000", OnJobFault: f.record})
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, toolBody(true))
		if a.status != http.StatusUnauthorized {
			t.Fatalf("status %d", a.status)
		}
		if _, msg := anthropicError(t, a.body); msg != MsgKeyRejected {
			t.Fatalf("message %q", msg)
		}
		if got := <-f.ch; got != "job-1: "+MsgKeyRejected {
			t.Fatalf("fault %q", got)
		}
		if strings.Contains(a.body, "sk-test-wrong-key-000") {
			t.Fatal("key echoed")
		}
	})

	t.Run("reset connections are retried", func(t *testing.T) {
		d := newDouble(t)
		d.ScriptAnthropic(deepseektest.Reset(), deepseektest.Text("second try"))
		p := startWithDouble(t, d, Options{BaseBackoff: 10 * time.Millisecond})
		token := open(t, p, "job-1")
		a := call(t, p, "/v1/messages", "bearer", token, toolBody(true))
		if a.status != http.StatusOK || !strings.Contains(a.body, `"text":"second `) || !strings.Contains(a.body, "message_stop") {
			t.Fatalf("status %d body %q", a.status, a.body)
		}
	})

	t.Run("job cost ceiling", func(t *testing.T) {
		d := newDouble(t)
		d.ScriptAnthropic(deepseektest.Text("expensive").WithUsage(deepseektest.Usage{InputTokens: 2_000_000, OutputTokens: 10_000}))
		f := newFaults()
		p := startWithDouble(t, d, Options{JobMaxCostUSD: 0.10, OnJobFault: f.record})
		token := open(t, p, "job-1")
		if a := call(t, p, "/v1/messages", "bearer", token, toolBody(true)); a.status != http.StatusOK {
			t.Fatalf("first call %d", a.status)
		}
		a := call(t, p, "/v1/messages", "bearer", token, toolBody(true))
		want := "budget exceeded: this job spent $0.28 of its $0.10 limit (BRIDGE_JOB_MAX_COST_USD)"
		if _, msg := anthropicError(t, a.body); a.status != http.StatusPaymentRequired || msg != want {
			t.Fatalf("status %d message %q, want %q", a.status, msg, want)
		}
		if got := <-f.ch; got != "job-1: "+want {
			t.Fatalf("fault %q", got)
		}
		if n := len(d.AnthropicRequests()); n != 1 {
			t.Fatalf("double saw %d requests, want 1", n)
		}
	})
}

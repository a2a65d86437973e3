package deepseek_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// newPair starts a double and a client pointed at it.
func newPair(t *testing.T, mod func(*deepseek.Options)) (*deepseektest.Server, *deepseek.Client) {
	t.Helper()
	srv := deepseektest.New()
	t.Cleanup(srv.Close)
	o := deepseek.Options{
		BaseURL: srv.URL(), APIKey: srv.Key(), Model: "deepseek-flash",
		MaxOutputTokens: 4096, Timeout: 10 * time.Second, RetryBackoff: 5 * time.Millisecond,
	}
	if mod != nil {
		mod(&o)
	}
	return srv, deepseek.NewClient(o)
}

func TestFlashAnswerUsageAndRequestShape(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, func(o *deepseek.Options) { o.MaxOutputTokens = 1234 })
	u := deepseektest.Usage{InputTokens: 1000, CacheHitTokens: 600, OutputTokens: 300, ReasoningTokens: 120}
	srv.Script(deepseektest.Reasoned("SECRET-REASONING step one step two", "The answer is 42.").WithUsage(u))

	res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "What is the answer?", Mode: deepseek.ModeAnalyze, Files: "file a.go:\npackage a\n```inner fence```"})
	if err != nil {
		t.Fatalf("Flash: %v", err)
	}
	if res.Answer != "The answer is 42." {
		t.Errorf("Answer = %q", res.Answer)
	}
	if strings.Contains(fmt.Sprintf("%+v", res), "SECRET-REASONING") {
		t.Errorf("reasoning_content leaked into the result: %+v", res)
	}
	want := deepseek.Usage{PromptTokens: 1000, CompletionTokens: 300, TotalTokens: 1300, CacheHitTokens: 600, CacheMissTokens: 400, ReasoningTokens: 120}
	if res.Usage != want {
		t.Errorf("Usage = %+v, want %+v", res.Usage, want)
	}
	if wantCost := deepseek.PriceFor("deepseek-flash").Cost(600, 400, 300); res.CostUSD != wantCost || wantCost == 0 {
		t.Errorf("CostUSD = %v, want %v", res.CostUSD, wantCost)
	}
	if res.Model != "deepseek-flash" || res.FinishReason != "stop" || res.Attempts != 1 || res.Duration <= 0 {
		t.Errorf("Model %q FinishReason %q Attempts %d Duration %v", res.Model, res.FinishReason, res.Attempts, res.Duration)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer "+srv.Key() {
		t.Errorf("path %q auth %q", r.Path, r.Header.Get("Authorization"))
	}
	if r.Model() != "deepseek-flash" || !r.Stream() || r.MaxTokens() != 1234 {
		t.Errorf("model %q stream %v max_tokens %d", r.Model(), r.Stream(), r.MaxTokens())
	}
	if so, _ := r.JSON["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage true", r.JSON["stream_options"])
	}
	msgs := r.Messages()
	if len(msgs) != 2 || msgs[0]["role"] != "system" || msgs[1]["role"] != "user" {
		t.Fatalf("messages = %v", msgs)
	}
	user := r.LastUserText()
	if !strings.Contains(user, "What is the answer?") || !strings.Contains(user, "````\nfile a.go:\npackage a\n```inner fence```\n````") {
		t.Errorf("user message does not carry the task and the fenced material:\n%s", user)
	}
}

func TestFlashModesHaveDistinctSystemPrompts(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, nil)
	seen := map[string]deepseek.Mode{}
	for _, m := range []deepseek.Mode{"", deepseek.ModeAnalyze, deepseek.ModeReview, deepseek.ModeCode, deepseek.ModeSummarize} {
		t.Run(string(m)+"_mode", func(t *testing.T) {
			if _, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Mode: m}); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			sys := reqs[len(reqs)-1].System()
			want, _ := deepseek.SystemPrompt(m)
			if sys != want || sys == "" {
				t.Fatalf("system prompt = %q, want %q", sys, want)
			}
			if prev, dup := seen[sys]; dup && !(prev == "" && m == deepseek.ModeAnalyze || prev == deepseek.ModeAnalyze && m == "") {
				t.Errorf("mode %q reuses the prompt of %q", m, prev)
			}
			seen[sys] = m
			if m == deepseek.ModeReview && !strings.Contains(sys, "unverified claim") {
				t.Errorf("review prompt does not treat conclusions as unverified claims: %s", sys)
			}
		})
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct prompts, want 4", len(seen))
	}

	before := len(srv.Requests())
	_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Mode: "poem"})
	if !errors.Is(err, deepseek.ErrInvalidRequest) || !strings.Contains(err.Error(), "analyze, review, code or summarize") {
		t.Errorf("unknown mode: err = %v", err)
	}
	_, err = c.Flash(t.Context(), deepseek.FlashRequest{Task: "  "})
	if !errors.Is(err, deepseek.ErrInvalidRequest) {
		t.Errorf("empty task: err = %v", err)
	}
	if n := len(srv.Requests()); n != before {
		t.Errorf("invalid requests reached the API (%d new requests)", n-before)
	}
}

func TestFlashToolCallTurnParsesWithoutRetry(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, nil)
	srv.Script(
		deepseektest.ToolCalls(deepseektest.Call("lookup", map[string]any{"q": "weather"})).WithReasoning("I need a tool"),
		deepseektest.Text("must not be reached"),
	)
	res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
	if err != nil {
		t.Fatalf("Flash: %v", err)
	}
	if res.Attempts != 1 || res.FinishReason != "tool_calls" {
		t.Errorf("Attempts %d FinishReason %q", res.Attempts, res.FinishReason)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "lookup" || res.ToolCalls[0].Arguments != `{"q":"weather"}` || res.ToolCalls[0].ID == "" {
		t.Errorf("ToolCalls = %+v", res.ToolCalls)
	}
	if !strings.Contains(res.Answer, "lookup") || strings.Contains(res.Answer, "I need a tool") {
		t.Errorf("Answer = %q", res.Answer)
	}
	if o, _ := srv.Pending(); o != 1 {
		t.Errorf("%d scripted turns left, want 1 (no retry on a tool-call turn)", o)
	}
}

func TestFlashBlankAnswer(t *testing.T) {
	t.Parallel()
	t.Run("one blank is retried once", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, nil)
		srv.Script(
			deepseektest.ReasoningOnly("thinking thinking").WithUsage(deepseektest.Usage{InputTokens: 100, OutputTokens: 4096, ReasoningTokens: 4096}),
			deepseektest.Text("second time lucky").WithUsage(deepseektest.Usage{InputTokens: 100, CacheHitTokens: 100, OutputTokens: 10}),
		)
		var phases []string
		res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Progress: func(e deepseek.ProgressEvent) { phases = append(phases, e.Phase) }})
		if err != nil {
			t.Fatalf("Flash: %v", err)
		}
		if res.Answer != "second time lucky" || res.Attempts != 2 {
			t.Errorf("Answer %q Attempts %d", res.Answer, res.Attempts)
		}
		if res.Usage.CompletionTokens != 4106 || res.Usage.CacheHitTokens != 100 || res.Usage.CacheMissTokens != 100 {
			t.Errorf("Usage %+v does not sum both billed attempts", res.Usage)
		}
		if !strings.Contains(strings.Join(phases, ","), deepseek.PhaseRetrying) {
			t.Errorf("no retrying progress event: %v", phases)
		}
	})
	t.Run("two blanks explain finish_reason length", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, nil)
		srv.Script(deepseektest.ReasoningOnly("a"), deepseektest.ReasoningOnly("b"), deepseektest.Text("never"))
		res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrBlankAnswer) {
			t.Fatalf("err = %v, want ErrBlankAnswer", err)
		}
		for _, want := range []string{"finish_reason: length", "reasoning", "DEEPSEEK_MAX_OUTPUT_TOKENS", "split the task"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if len(srv.Requests()) != 2 || res.Attempts != 2 || res.CostUSD <= 0 || res.FinishReason != "length" {
			t.Errorf("%d requests, Attempts %d, CostUSD %v, FinishReason %q; want 2, 2, >0, length", len(srv.Requests()), res.Attempts, res.CostUSD, res.FinishReason)
		}
	})
}

func TestFlashRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn deepseektest.Turn
	}{
		{"429", deepseektest.Error(429)},
		{"500", deepseektest.Error(500)},
		{"503", deepseektest.Error(503)},
		{"connection reset", deepseektest.Reset()},
		{"stream cut midway", deepseektest.Text("partial answer that never ends").WithBreak(deepseektest.BreakCut)},
		{"malformed bytes", deepseektest.Text("garbled").WithBreak(deepseektest.BreakMalformed)},
		{"reset after keep-alives", deepseektest.Text("x").WithKeepAlives(2).WithBreak(deepseektest.BreakCut)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newPair(t, nil)
			srv.Script(tc.turn, deepseektest.Text("recovered"))
			var events []deepseek.ProgressEvent
			res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Progress: func(e deepseek.ProgressEvent) { events = append(events, e) }})
			if err != nil {
				t.Fatalf("Flash: %v", err)
			}
			if res.Answer != "recovered" || res.Attempts != 2 || len(srv.Requests()) != 2 {
				t.Errorf("Answer %q Attempts %d requests %d", res.Answer, res.Attempts, len(srv.Requests()))
			}
			var retried bool
			for _, e := range events {
				retried = retried || e.Phase == deepseek.PhaseRetrying && strings.Contains(e.Message, "retrying in")
			}
			if !retried {
				t.Errorf("no retrying progress event: %+v", events)
			}
		})
	}
}

func TestFlashHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, nil)
	srv.Script(deepseektest.RateLimited(1), deepseektest.Text("after the wait"))
	res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
	if err != nil || res.Answer != "after the wait" {
		t.Fatalf("Flash: %q, %v", res.Answer, err)
	}
	reqs := srv.Requests()
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < time.Second {
		t.Errorf("retried after %v, want at least the 1 s of Retry-After", gap)
	}
}

func TestFlashGivesUp(t *testing.T) {
	t.Parallel()
	t.Run("Retry-After beyond the deadline", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, func(o *deepseek.Options) { o.Timeout = 3 * time.Second })
		srv.Script(deepseektest.RateLimited(120), deepseektest.Text("never"))
		start := time.Now()
		_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrRateLimited) || !strings.Contains(err.Error(), "deadline") || !strings.Contains(err.Error(), "2m0s") {
			t.Errorf("err = %v", err)
		}
		var apiErr *deepseek.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfterSeconds != 120 {
			t.Errorf("APIError = %+v", apiErr)
		}
		if d := time.Since(start); d > 2*time.Second || len(srv.Requests()) != 1 {
			t.Errorf("took %v with %d requests; want an immediate give-up after 1", d, len(srv.Requests()))
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, func(o *deepseek.Options) { o.MaxAttempts = 2 })
		srv.Close()
		res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrUpstream) || !strings.Contains(err.Error(), "could not reach DeepSeek") ||
			!strings.Contains(err.Error(), "check DEEPSEEK_BASE_URL") || res.Attempts != 2 {
			t.Errorf("err = %v after %d attempts", err, res.Attempts)
		}
	})
	// A base URL with credentials (a proxy's user:pass@) never reaches the
	// error text, which goes back to the MCP client as the tool result.
	t.Run("credentials in the base URL", func(t *testing.T) {
		t.Parallel()
		srv := deepseektest.New()
		addr := srv.Addr().String()
		srv.Close()
		for _, base := range []string{"http://proxyuser:proxypass@" + addr, "http://proxyuser:proxypass@bad host:1"} {
			c := deepseek.NewClient(deepseek.Options{BaseURL: base, APIKey: "sk-test-double-key", MaxAttempts: 1})
			_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
			if err == nil || strings.Contains(err.Error(), "proxypass") || strings.Contains(err.Error(), "proxyuser") {
				t.Errorf("%s: err = %v", base, err)
			}
		}
	})
	t.Run("MaxAttempts", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, func(o *deepseek.Options) { o.MaxAttempts = 3 })
		srv.Script(deepseektest.Error(503), deepseektest.Error(500), deepseektest.Error(503), deepseektest.Text("never"))
		res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrUpstream) || !strings.Contains(err.Error(), "overloaded (503)") || !strings.Contains(err.Error(), "after 3 attempts") {
			t.Errorf("err = %v", err)
		}
		if res.Attempts != 3 || len(srv.Requests()) != 3 {
			t.Errorf("Attempts %d requests %d, want 3", res.Attempts, len(srv.Requests()))
		}
	})
}

func TestFlashErrorClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		turn     *deepseektest.Turn
		key      string
		model    string
		sentinel error
		status   int
		text     []string
	}{
		{name: "401 scripted", turn: ptr(deepseektest.Error(401)), sentinel: deepseek.ErrKeyRejected, status: 401,
			text: []string{"DeepSeek rejected the API key (401): check DEEPSEEK_API_KEY"}},
		{name: "wrong key", key: "sk-test-wrong-key", sentinel: deepseek.ErrKeyRejected, status: 401,
			text: []string{"DeepSeek rejected the API key (401): check DEEPSEEK_API_KEY"}},
		{name: "402", turn: ptr(deepseektest.Error(402)), sentinel: deepseek.ErrInsufficientBalance, status: 402,
			text: []string{"insufficient balance", "top up", "platform.deepseek.com"}},
		{name: "400", turn: ptr(deepseektest.Error(400)), sentinel: deepseek.ErrBadRequest, status: 400,
			text: []string{"(400)", "invalid format"}},
		{name: "422", turn: ptr(deepseektest.Turn{Status: 422, ErrorBody: `{"error":{"message":"max_tokens is too large","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`}),
			sentinel: deepseek.ErrBadRequest, status: 422, text: []string{"(422)", "max_tokens is too large"}},
		{name: "unknown model", model: "deepseek-imaginary", sentinel: deepseek.ErrBadRequest, status: 400,
			text: []string{"Model Not Exist"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newPair(t, func(o *deepseek.Options) {
				if tc.key != "" {
					o.APIKey = tc.key
				}
				if tc.model != "" {
					o.Model = tc.model
				}
			})
			if tc.turn != nil {
				srv.Script(*tc.turn)
			}
			srv.Script(deepseektest.Text("never"))
			res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want %v", err, tc.sentinel)
			}
			var apiErr *deepseek.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status {
				t.Errorf("APIError = %+v, want status %d", apiErr, tc.status)
			}
			for _, want := range tc.text {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if res.Attempts != 1 || len(srv.Requests()) != 1 {
				t.Errorf("Attempts %d requests %d: a %d must not be retried", res.Attempts, len(srv.Requests()), tc.status)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestFlashWithoutKeyMakesNoCall(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, func(o *deepseek.Options) { o.APIKey = "" })
	_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
	if !errors.Is(err, deepseek.ErrNoAPIKey) || !strings.Contains(err.Error(), "set DEEPSEEK_API_KEY") {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests without a key, want 0", n)
	}
}

func TestFlashCancelAndTimeoutDiffer(t *testing.T) {
	t.Parallel()
	t.Run("caller cancel", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, nil)
		arrived := make(chan struct{})
		srv.Script(deepseektest.Func(func(deepseektest.Request) deepseektest.Turn {
			close(arrived)
			return deepseektest.Text("too late").WithDelay(time.Minute)
		}))
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-arrived; cancel() }()
		start := time.Now()
		_, err := c.Flash(ctx, deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrCanceled) || errors.Is(err, deepseek.ErrTimeout) {
			t.Errorf("err = %v, want ErrCanceled only", err)
		}
		if !strings.Contains(err.Error(), "cancelled by the caller") || time.Since(start) > 5*time.Second {
			t.Errorf("err %q after %v", err, time.Since(start))
		}
	})
	cases := []struct {
		name string
		turn deepseektest.Turn
	}{
		{"slow first byte", deepseektest.Text("too late").WithDelay(time.Minute)},
		{"endless keep-alives", deepseektest.Text("too late").WithKeepAlives(100000).WithChunkDelay(20 * time.Millisecond)},
		{"slow stream", deepseektest.Text(strings.Repeat("word ", 1000)).WithChunkDelay(20 * time.Millisecond)},
	}
	for _, tc := range cases {
		t.Run("timeout/"+tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newPair(t, func(o *deepseek.Options) { o.Timeout = 300 * time.Millisecond })
			srv.Script(tc.turn)
			_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
			if !errors.Is(err, deepseek.ErrTimeout) || errors.Is(err, deepseek.ErrCanceled) {
				t.Fatalf("err = %v, want ErrTimeout only", err)
			}
			if !strings.Contains(err.Error(), "DEEPSEEK_TIMEOUT_MS") || !strings.Contains(err.Error(), "300ms") {
				t.Errorf("err = %q", err)
			}
		})
	}
}

func TestFlashProgress(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, nil)
	reasoning := strings.TrimSpace(strings.Repeat("think ", 40))
	answer := strings.TrimSpace(strings.Repeat("word ", 40))
	srv.Script(deepseektest.Reasoned(reasoning, answer).WithKeepAlives(3))
	var events []deepseek.ProgressEvent
	res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Progress: func(e deepseek.ProgressEvent) { events = append(events, e) }})
	if err != nil || res.Answer != answer {
		t.Fatalf("Flash: %q, %v", res.Answer, err)
	}
	keepAlives, last := 0, -1
	var order []string
	for _, e := range events {
		if e.Tokens < last {
			t.Errorf("Tokens went down: %+v", events)
		}
		last = e.Tokens
		if e.Phase == deepseek.PhaseWaiting && strings.Contains(e.Message, "kept alive") {
			keepAlives++
		}
		if len(order) == 0 || order[len(order)-1] != e.Phase {
			order = append(order, e.Phase)
		}
	}
	if keepAlives != 3 {
		t.Errorf("%d keep-alive events, want 3", keepAlives)
	}
	if got := strings.Join(order, ","); got != "waiting,reasoning,answering" {
		t.Errorf("phase order %s", got)
	}
	// 40 reasoning + 40 answer chunks: an event on each phase change and
	// then every ProgressEvery (16) chunks of the same phase.
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s:%d", e.Phase, e.Tokens))
	}
	if want := "waiting:0 waiting:0 waiting:0 waiting:0 reasoning:1 reasoning:17 reasoning:33 answering:41 answering:57 answering:73"; strings.Join(got, " ") != want {
		t.Errorf("events\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestKeyNeverLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	l := zerolog.New(&logs).Level(zerolog.DebugLevel)
	srv := deepseektest.New(deepseektest.WithKey("sk-test-double-key-never-log-me"))
	t.Cleanup(srv.Close)
	o := deepseek.Options{BaseURL: srv.URL(), APIKey: srv.Key(), Logger: &l, RetryBackoff: time.Millisecond}
	c := deepseek.NewClient(o)
	srv.Script(deepseektest.Error(503), deepseektest.Reset(), deepseektest.ReasoningOnly("r"), deepseektest.Text("ok"), deepseektest.Error(402))
	var errs []string
	for range 2 {
		if _, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"}); err != nil {
			errs = append(errs, err.Error())
		}
	}
	bad := deepseek.NewClient(deepseek.Options{BaseURL: srv.URL(), APIKey: "sk-test-wrong-key-never-log-me", Logger: &l})
	if _, err := bad.Flash(t.Context(), deepseek.FlashRequest{Task: "x"}); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) != 2 || logs.Len() == 0 {
		t.Fatalf("errors %q, %d log bytes: the scenario did not run as scripted", errs, logs.Len())
	}
	all := logs.String() + strings.Join(errs, "\n") + fmt.Sprint(o) + fmt.Sprintf("%+v %#v", o, o)
	for _, secret := range []string{"never-log-me", "sk-test-double-key"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q appears in logs, errors or printed Options:\n%s", secret, all)
		}
	}
}

func TestFlashConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv, c := newPair(t, nil)
	srv.Script(deepseektest.Func(func(r deepseektest.Request) deepseektest.Turn {
		return deepseektest.Text("echo: " + r.LastUserText())
	}))
	const n = 8
	errc := make(chan error, n)
	for i := range n {
		go func() {
			task := fmt.Sprintf("task-%d", i)
			res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: task})
			if err == nil && !strings.Contains(res.Answer, task) && !strings.Contains(res.Answer, deepseektest.DefaultText) {
				err = fmt.Errorf("answer %q for %s", res.Answer, task)
			}
			errc <- err
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	if len(srv.Requests()) != n {
		t.Errorf("%d requests, want %d", len(srv.Requests()), n)
	}
}

// TestFlashReadsAJSONBodyToAStreamedRequest: an OpenAI-compatible gateway may
// answer stream: true with one application/json chat.completion. The client
// reads it by its content type: one attempt, the answer, the usage — not six
// attempts that each see "the stream ended before the answer was complete".
func TestFlashReadsAJSONBodyToAStreamedRequest(t *testing.T) {
	t.Parallel()
	u := deepseektest.Usage{InputTokens: 50, OutputTokens: 7}
	for name, turn := range map[string]deepseektest.Turn{
		"plain":                   deepseektest.Reasoned("SECRET-REASONING", "the whole answer").WithUsage(u).WithoutStream(),
		"after blank keep-alives": deepseektest.Text("the whole answer").WithUsage(u).WithKeepAlives(3).WithoutStream(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, c := newPair(t, nil)
			srv.Script(turn, deepseektest.Text("a retry must not reach this"))
			var phases []string
			res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x", Progress: func(e deepseek.ProgressEvent) { phases = append(phases, e.Phase) }})
			if err != nil {
				t.Fatalf("Flash: %v", err)
			}
			if res.Answer != "the whole answer" || res.Attempts != 1 || res.FinishReason != "stop" {
				t.Errorf("Answer %q Attempts %d FinishReason %q; want the whole answer, 1, stop", res.Answer, res.Attempts, res.FinishReason)
			}
			if res.Usage.PromptTokens != 50 || res.Usage.CompletionTokens != 7 {
				t.Errorf("Usage = %+v, want 50 prompt and 7 completion tokens", res.Usage)
			}
			if strings.Contains(fmt.Sprintf("%+v", res), "SECRET-REASONING") {
				t.Errorf("reasoning_content leaked into the result: %+v", res)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || !reqs[0].Stream() {
				t.Fatalf("%d requests (stream %v), want 1 streamed request", len(reqs), len(reqs) == 1 && reqs[0].Stream())
			}
			if !slices.Contains(phases, deepseek.PhaseAnswering) || slices.Contains(phases, deepseek.PhaseRetrying) {
				t.Errorf("progress phases %v: want answering and no retrying", phases)
			}
		})
	}
	t.Run("a body past the output cap is cut off, not retried", func(t *testing.T) {
		t.Parallel()
		srv, c := newPair(t, func(o *deepseek.Options) { o.MaxOutputTokens = 1 })
		srv.Script(deepseektest.Text(strings.Repeat("x", deepseek.OutputCap(1)+64<<10+1)).WithoutStream(), deepseektest.Text("never"))
		_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrOverOutputCap) || !strings.Contains(err.Error(), "application/json") {
			t.Fatalf("err = %v, want ErrOverOutputCap naming the application/json body", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("a body that is not a completion is an upstream error", func(t *testing.T) {
		t.Parallel()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			io.WriteString(w, `{"choices":[{"message":{"content":"cut`)
		}))
		t.Cleanup(hs.Close)
		c := deepseek.NewClient(deepseek.Options{BaseURL: hs.URL, APIKey: "k", MaxAttempts: 1, Timeout: 10 * time.Second})
		_, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
		if !errors.Is(err, deepseek.ErrUpstream) || !strings.Contains(err.Error(), "not a chat completion") {
			t.Fatalf("err = %v, want ErrUpstream saying the body is not a chat completion", err)
		}
	})
}

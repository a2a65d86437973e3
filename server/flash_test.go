package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

func TestFlashResult(t *testing.T) {
	var got deepseek.FlashRequest
	flash := &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		got = req
		return deepseek.FlashResult{
			Answer: "42", Model: "deepseek-flash", FinishReason: "stop",
			Usage:   deepseek.Usage{PromptTokens: 100, CompletionTokens: 30, CacheHitTokens: 60, CacheMissTokens: 40, ReasoningTokens: 20},
			CostUSD: 0.0000154, Duration: 1500 * time.Millisecond,
		}, nil
	}}
	env := newTestEnv(t, Options{Flash: flash})
	r := post(t, env.url, callBody(1, "deepseek_flash", map[string]any{"task": "what is it?", "mode": "review", "files": "a.go: ..."}, nil), mcpHeaders)
	res := finalResult(t, messages(t, r))
	if res.IsError || !strings.HasPrefix(res.text(), "42\n") || !strings.Contains(res.text(), "$0.000015") {
		t.Fatalf("result = %+v", res)
	}
	if got.Task != "what is it?" || got.Mode != deepseek.ModeReview || got.Files != "a.go: ..." || got.Progress == nil {
		t.Errorf("request = %+v", got)
	}
	var out tools.FlashOutput
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	want := tools.FlashOutput{Answer: "42", Model: "deepseek-flash", Thinking: "high", FinishReason: "stop",
		Usage:   tools.FlashUsage{PromptTokens: 100, CompletionTokens: 30, CacheHitTokens: 60, CacheMissTokens: 40, ReasoningTokens: 20},
		CostUSD: 0.0000154, DurationMS: 1500}
	if out != want {
		t.Errorf("structuredContent = %+v, want %+v", out, want)
	}
	var raw map[string]any
	json.Unmarshal(res.StructuredContent, &raw)
	usage, _ := raw["usage"].(map[string]any)
	for _, k := range []string{"prompt_tokens", "completion_tokens", "cache_hit_tokens", "cache_miss_tokens", "reasoning_tokens"} {
		if _, ok := usage[k]; !ok {
			t.Errorf("usage lacks %s: %v", k, usage)
		}
	}
}

func TestFlashErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		isError bool   // an error result (the model can act on it)
		rpcErr  bool   // a JSON-RPC error (the server broke)
		want    string // in the text
	}{
		{"no key", deepseek.ErrNoAPIKey, true, false, "DEEPSEEK_API_KEY"},
		{"401", fmt.Errorf("%w", deepseek.ErrKeyRejected), true, false, "rejected the API key"},
		{"402", deepseek.ErrInsufficientBalance, true, false, "top up"},
		{"400", fmt.Errorf("%w (400): Invalid max_tokens", deepseek.ErrBadRequest), true, false, "Invalid max_tokens"},
		{"timeout", fmt.Errorf("%w of 90s (DEEPSEEK_TIMEOUT_MS)", deepseek.ErrTimeout), true, false, "DEEPSEEK_TIMEOUT_MS"},
		{"cancel", fmt.Errorf("%w after 1s", deepseek.ErrCanceled), true, false, "cancelled by the caller"},
		{"blank twice", fmt.Errorf("%w twice (finish_reason: length): raise DEEPSEEK_MAX_OUTPUT_TOKENS", deepseek.ErrBlankAnswer), true, false, "finish_reason: length"},
		{"upstream gave up", fmt.Errorf("%w: 503 after 6 attempts", deepseek.ErrUpstream), true, false, "503"},
		{"rate limited", deepseek.ErrRateLimited, true, false, "429"},
		{"unknown failure", errors.New("disk on fire"), false, true, "disk on fire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flash := &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
				return deepseek.FlashResult{}, tt.err
			}}
			env := newTestEnv(t, Options{Flash: flash})
			msgs := messages(t, post(t, env.url, callBody(1, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders))
			last := msgs[len(msgs)-1]
			if tt.rpcErr {
				if last.Error == nil || !strings.Contains(last.Error.Message, tt.want) {
					t.Fatalf("want a JSON-RPC error with %q, got %+v", tt.want, last)
				}
				return
			}
			res := finalResult(t, msgs)
			if res.IsError != tt.isError || !strings.Contains(res.text(), tt.want) {
				t.Fatalf("IsError=%v text=%q, want IsError=%v with %q", res.IsError, res.text(), tt.isError, tt.want)
			}
		})
	}
}

// TestFlashAgainstTheDouble runs the real DeepSeek client against the
// in-project double, through the full router.
func TestFlashAgainstTheDouble(t *testing.T) {
	d := deepseektest.New()
	t.Cleanup(d.Close)
	client := deepseek.NewClient(deepseek.Options{BaseURL: d.URL(), APIKey: d.Key(), Model: "deepseek-flash", Timeout: 10 * time.Second, RetryBackoff: time.Millisecond})
	env := newTestEnv(t, Options{Flash: client})
	t.Run("answer with progress", func(t *testing.T) {
		d.Script(deepseektest.Reasoned("thinking hard about it", "the double says hello"))
		msgs := messages(t, post(t, env.url, callBody(1, "deepseek_flash", map[string]any{"task": "say hello"}, "p1"), mcpHeaders))
		res := finalResult(t, msgs)
		if res.IsError || !strings.HasPrefix(res.text(), "the double says hello") || strings.Contains(res.text(), "thinking hard") {
			t.Fatalf("result = %q", res.text())
		}
		var out tools.FlashOutput
		json.Unmarshal(res.StructuredContent, &out)
		if out.Answer != "the double says hello" || out.Usage.PromptTokens == 0 || out.Usage.CompletionTokens == 0 || out.Model == "" {
			t.Errorf("structuredContent = %+v", out)
		}
		if len(progressOf(t, msgs)) == 0 {
			t.Error("no progress notifications for a streamed answer")
		}
	})
	t.Run("a JSON body to a streamed request is the answer", func(t *testing.T) {
		n := len(d.Requests())
		d.Script(deepseektest.Text("one whole JSON body").WithoutStream())
		res := finalResult(t, messages(t, post(t, env.url, callBody(4, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders)))
		if res.IsError || !strings.HasPrefix(res.text(), "one whole JSON body") {
			t.Fatalf("result = %+v", res)
		}
		if reqs := d.Requests()[n:]; len(reqs) != 1 || !reqs[0].Stream() {
			t.Errorf("%d upstream requests, want 1 streamed request", len(reqs))
		}
	})
	t.Run("a blank task is refused before DeepSeek is asked", func(t *testing.T) {
		n := len(d.Requests())
		res := finalResult(t, messages(t, post(t, env.url, callBody(5, "deepseek_flash", map[string]any{"task": " \n "}, nil), mcpHeaders)))
		if !res.IsError || !strings.Contains(res.text(), "the task is empty: say what DeepSeek should do") {
			t.Fatalf("result = %+v", res)
		}
		if len(d.Requests()) != n {
			t.Error("DeepSeek was asked")
		}
	})
	t.Run("402 is an error result", func(t *testing.T) {
		d.Script(deepseektest.Error(402))
		res := finalResult(t, messages(t, post(t, env.url, callBody(2, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders)))
		if !res.IsError || !strings.Contains(res.text(), "402") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("blank twice explains length", func(t *testing.T) {
		d.Script(deepseektest.ReasoningOnly("all budget"), deepseektest.ReasoningOnly("again"))
		res := finalResult(t, messages(t, post(t, env.url, callBody(3, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders)))
		if !res.IsError || !strings.Contains(res.text(), "length") {
			t.Fatalf("result = %+v", res)
		}
	})
	for _, r := range d.Requests() {
		if r.Model() != "deepseek-flash" {
			t.Errorf("request used model %q", r.Model())
		}
	}
}

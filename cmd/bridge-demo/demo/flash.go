package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// FlashAnswer is what the double answers the demo's deepseek_flash call; the
// step checks that exactly this came back through the MCP endpoint.
const FlashAnswer = "The bridge lets an MCP host (ChatGPT, Claude Code, Codex, Cursor) hand work to DeepSeek: " +
	"one-shot answers through deepseek_flash, and agent jobs that run under human approval."

// flashUsage is what the double reports the call cost.
var flashUsage = deepseektest.Usage{InputTokens: 1200, CacheHitTokens: 1024, OutputTokens: 90, ReasoningTokens: 41}

// flashResult is the structuredContent of deepseek_flash.
type flashResult struct {
	Answer       string `json:"answer"`
	Model        string `json:"model"`
	FinishReason string `json:"finish_reason"`
	Usage        struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		CacheHitTokens   int64 `json:"cache_hit_tokens"`
		CacheMissTokens  int64 `json:"cache_miss_tokens"`
		ReasoningTokens  int64 `json:"reasoning_tokens"`
	} `json:"usage"`
	CostUSD    float64 `json:"cost_usd"`
	DurationMS int64   `json:"duration_ms"`
}

func flashStep() Step {
	return Step{
		Name: "deepseek_flash (one-shot answer)",
		Script: []deepseektest.ScriptTurn{{
			Side:      "openai",
			Reasoning: "The reader wants one sentence about what the bridge is for. (Reasoning is never shown to the caller.)",
			Text:      FlashAnswer,
			Usage:     &flashUsage,
		}},
		Run: runFlash,
	}
}

func runFlash(ctx context.Context, e *Env) error {
	res, err := callTool(ctx, e.Session, "deepseek_flash", map[string]any{
		"task": "In one sentence: what is this bridge for?",
		"mode": "summarize",
	}, "demo-flash")
	if err != nil {
		return fmt.Errorf("tools/call deepseek_flash: %w", err)
	}
	e.WaitProgress("demo-flash", 2*time.Second)
	text := resultText(res)
	if res.IsError {
		return fmt.Errorf("deepseek_flash returned an error result: %s", text)
	}
	var fr flashResult
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("structuredContent: %w", err)
	}
	if err := json.Unmarshal(b, &fr); err != nil {
		return fmt.Errorf("structuredContent %s: %w", b, err)
	}
	fmt.Fprintf(e.Out, "answer (text content for the calling model):\n  %s\n", strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  "))
	u := fr.Usage
	fmt.Fprintf(e.Out, "usage: %d prompt tokens (%d cache hit, %d miss), %d completion tokens (%d reasoning)\n",
		u.PromptTokens, u.CacheHitTokens, u.CacheMissTokens, u.CompletionTokens, u.ReasoningTokens)
	fmt.Fprintf(e.Out, "model %s, finish_reason %s, cost $%.6f at DeepSeek's prices, %d ms\n",
		fr.Model, fr.FinishReason, fr.CostUSD, fr.DurationMS)
	if fr.Answer != FlashAnswer {
		return fmt.Errorf("structuredContent.answer = %q, want the double's scripted answer", fr.Answer)
	}
	fmt.Fprintln(e.Out, "ok: the answer came from the DeepSeek double through the bridge's MCP endpoint")
	return nil
}

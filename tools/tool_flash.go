package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// FlashClient is what deepseek_flash needs from the DeepSeek client.
type FlashClient interface {
	Flash(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error)
}

var _ FlashClient = (*deepseek.Client)(nil)

// FlashOutput is the structuredContent of deepseek_flash.
type FlashOutput struct {
	Answer       string     `json:"answer" jsonschema:"DeepSeek's answer (its reasoning is never included)"`
	Model        string     `json:"model" jsonschema:"the model that answered"`
	Thinking     string     `json:"thinking" jsonschema:"the thinking level the call ran with: off, low, high or max"`
	FinishReason string     `json:"finish_reason" jsonschema:"why generation stopped: stop, length, content_filter, ..."`
	Usage        FlashUsage `json:"usage" jsonschema:"tokens billed for this call, retries included"`
	CostUSD      float64    `json:"cost_usd" jsonschema:"the usage at DeepSeek's published prices, in US dollars"`
	DurationMS   int64      `json:"duration_ms" jsonschema:"wall-clock time of the call in milliseconds"`
	// JSON is the answer parsed, with response_format "json".
	JSON any `json:"json,omitempty" jsonschema:"with response_format json: the answer parsed, any JSON value"`
}

// FlashUsage is the token usage of a flash call.
type FlashUsage struct {
	PromptTokens     int64 `json:"prompt_tokens" jsonschema:"input tokens"`
	CompletionTokens int64 `json:"completion_tokens" jsonschema:"output tokens, reasoning included"`
	CacheHitTokens   int64 `json:"cache_hit_tokens" jsonschema:"input tokens served from DeepSeek's context cache"`
	CacheMissTokens  int64 `json:"cache_miss_tokens" jsonschema:"input tokens not in the cache"`
	ReasoningTokens  int64 `json:"reasoning_tokens" jsonschema:"output tokens spent on reasoning"`
}

// flashArgs are deepseek_flash's arguments.
type flashArgs struct {
	Task           string             `json:"task"`
	Messages       []deepseek.Message `json:"messages"`
	Mode           string             `json:"mode"`
	Files          string             `json:"files"`
	Model          string             `json:"model"`
	Thinking       string             `json:"thinking"`
	ResponseFormat string             `json:"response_format"`
}

// The values of deepseek_flash's response_format.
const (
	formatText = "text"
	formatJSON = "json"
)

var flashModes = []string{string(deepseek.ModeAnalyze), string(deepseek.ModeReview), string(deepseek.ModeCode), string(deepseek.ModeSummarize)}

// modelFixable are the flash errors the calling model can act on (change the
// request, tell the user to fix the key or balance, retry later): they come
// back as an error result with the client's text. Anything else is a Go error.
var modelFixable = []error{
	deepseek.ErrNoAPIKey, deepseek.ErrKeyRejected, deepseek.ErrInsufficientBalance,
	deepseek.ErrBadRequest, deepseek.ErrInvalidRequest, deepseek.ErrRateLimited, deepseek.ErrUpstream,
	deepseek.ErrTimeout, deepseek.ErrCanceled, deepseek.ErrBlankAnswer,
}

// FlashTool is deepseek_flash: one task, optional pasted material, one answer,
// from the model and at the thinking level the call names (cat checks them).
func FlashTool(c FlashClient, cat deepseek.Catalog) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	tool := mcp.NewTool("deepseek_flash",
		mcp.WithDescription("Hand a self-contained task to DeepSeek (a fast, cheap model) and get its answer, with token usage and cost. "+
			"DeepSeek sees only task and files: paste the material it needs (code, diffs, logs, documents) into files; it cannot read paths or URLs. "+
			"Modes: analyze (default) explains and reasons about the material; review looks for defects and treats every conclusion in the material as an unverified claim; "+
			"code writes or changes code; summarize condenses."),
		mcp.WithTitleAnnotation("Ask DeepSeek"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithString("task", mcp.Description("what DeepSeek should do, self-contained: it sees nothing of this conversation; give task or messages")),
		mcp.WithArray("messages", mcp.Description("instead of task, a conversation for DeepSeek to continue: system, user and assistant turns in order, the last one the user's"),
			mcp.MinItems(1), mcp.Items(map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"role", "content"},
				"properties": map[string]any{
					"role":    map[string]any{"type": "string", "enum": []string{deepseek.RoleSystem, deepseek.RoleUser, deepseek.RoleAssistant}},
					"content": map[string]any{"type": "string"},
				},
			})),
		mcp.WithString("response_format", mcp.Enum(formatText, formatJSON), mcp.DefaultString(formatText),
			mcp.Description("json: DeepSeek answers with one JSON value, returned parsed in structuredContent.json (an answer that does not parse is an error carrying it); default text")),
		mcp.WithString("mode", mcp.Enum(flashModes...), mcp.DefaultString(string(deepseek.ModeAnalyze)),
			mcp.Description("analyze | review | code | summarize (default analyze)")),
		mcp.WithString("files", mcp.Description("inline material the task is about, pasted as text (file contents, diffs, logs); optional")),
		modelArg(cat), thinkingArg(),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[FlashOutput](),
	)
	// A blank task passes the schema and is refused by the client
	// (deepseek.ErrInvalidRequest); an absent mode is analyze.
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a flashArgs
		if res := bindArgs(req, &a); res != nil {
			return res, nil
		}
		if a.Mode == "" {
			a.Mode = string(deepseek.ModeAnalyze)
		}
		switch blank := strings.TrimSpace(a.Task) == ""; {
		case blank && len(a.Messages) == 0:
			return mcp.NewToolResultError("the task is empty: say what DeepSeek should do (or give messages, a conversation ending with the user's turn)"), nil
		case !blank && len(a.Messages) > 0:
			return mcp.NewToolResultError("give exactly one of task (one self-contained request) or messages (a conversation ending with the user's turn), not both"), nil
		}
		model, thinking, err := cat.Resolve(a.Model, a.Thinking)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		p := reporterFrom(ctx)
		res, err := c.Flash(ctx, deepseek.FlashRequest{
			Task:     strings.TrimSpace(a.Task),
			Messages: a.Messages,
			JSON:     a.ResponseFormat == formatJSON,
			Mode:     deepseek.Mode(a.Mode),
			Files:    a.Files,
			Model:    model.ID,
			Thinking: a.Thinking,
			Progress: func(ev deepseek.ProgressEvent) {
				msg := ev.Phase
				if ev.Message != "" {
					msg += ": " + ev.Message
				}
				p.Report(float64(ev.Tokens), 0, msg)
			},
		})
		if err == nil {
			p.Done("answer received")
		} else {
			p.Done("failed")
		}
		if err != nil {
			for _, e := range modelFixable {
				if errors.Is(err, e) {
					return mcp.NewToolResultError(err.Error()), nil
				}
			}
			return nil, fmt.Errorf("deepseek_flash: %w", err)
		}
		out := FlashOutput{
			Answer: res.Answer, Model: res.Model, Thinking: thinking, FinishReason: res.FinishReason,
			Usage: FlashUsage{
				PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
				CacheHitTokens: res.Usage.CacheHitTokens, CacheMissTokens: res.Usage.CacheMissTokens,
				ReasoningTokens: res.Usage.ReasoningTokens,
			},
			CostUSD:    res.CostUSD,
			DurationMS: res.Duration.Milliseconds(),
		}
		if a.ResponseFormat == formatJSON {
			if err := json.Unmarshal([]byte(res.Answer), &out.JSON); err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("DeepSeek's answer is not valid JSON (%v); it was:\n%s", err, res.Answer)), nil
			}
		}
		return mcp.NewToolResultStructured(out, flashText(out)), nil
	}
	return tool, handler
}

// flashText is the answer for the calling model, with one line of accounting.
func flashText(o FlashOutput) string {
	return fmt.Sprintf("%s\n\n[%s · thinking %s · finish_reason %s · %d prompt tokens (%d cached) · %d completion tokens (%d reasoning) · $%.6f · %s]",
		o.Answer, o.Model, o.Thinking, o.FinishReason, o.Usage.PromptTokens, o.Usage.CacheHitTokens,
		o.Usage.CompletionTokens, o.Usage.ReasoningTokens, o.CostUSD, (time.Duration(o.DurationMS) * time.Millisecond).String())
}

// modelArg and thinkingArg are the per-call model and thinking arguments of
// deepseek_flash and deepseek_agent_start.
func modelArg(cat deepseek.Catalog) mcp.ToolOption {
	return mcp.WithString("model", mcp.Description(fmt.Sprintf(
		"the model to run, one of %s (default %s); deepseek_models lists them with prices", strings.Join(cat.IDs(), ", "), cat.Default)))
}

func thinkingArg() mcp.ToolOption {
	return mcp.WithString("thinking", mcp.Enum(deepseek.ThinkingLevels...), mcp.Description(
		"off turns DeepSeek's thinking off; low, high or max sets its effort (default: DeepSeek's own, high)"))
}

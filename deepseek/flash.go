package deepseek

import "time"

// Mode selects the system prompt of a flash call.
type Mode string

const (
	ModeAnalyze   Mode = "analyze"
	ModeReview    Mode = "review"
	ModeCode      Mode = "code"
	ModeSummarize Mode = "summarize"
)

// FlashRequest is one deepseek_flash call.
type FlashRequest struct {
	Task  string
	Mode  Mode   // "" means analyze
	Files string // inline material, may be empty
}

// Usage is what one or more chat completions cost, in tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CacheHitTokens   int64 `json:"prompt_cache_hit_tokens"`
	CacheMissTokens  int64 `json:"prompt_cache_miss_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

// FlashResult is the answer of a flash call; ReasoningContent is never part of it.
type FlashResult struct {
	Answer       string        `json:"answer"`
	Model        string        `json:"model"`
	FinishReason string        `json:"finish_reason"`
	Usage        Usage         `json:"usage"`
	CostUSD      float64       `json:"cost_usd"`
	Duration     time.Duration `json:"-"`
	Attempts     int           `json:"-"` // HTTP attempts, retries included
}

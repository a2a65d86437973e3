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
	// Task is the one request; Messages instead is a conversation, whose
	// last turn is the user's (exactly one of them is set).
	Task     string
	Messages []Message
	Mode     Mode   // "" means analyze
	Files    string // inline material, may be empty: after the task, or the last user turn
	// JSON asks for DeepSeek's JSON output (response_format json_object):
	// the answer is one JSON value.
	JSON bool
	// Model is the model id ("" means the client's); Thinking one of
	// ThinkingLevels ("" sends nothing: DeepSeek's default, high).
	Model    string
	Thinking string

	// Progress, when set, is called from Flash's goroutine as the answer
	// streams in: on every phase change, on every keep-alive the API sends,
	// before each retry, and every ProgressEvery chunks of the same phase.
	Progress func(ProgressEvent)
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // RoleSystem, RoleUser or RoleAssistant
	Content string `json:"content"`
}

// The roles of a conversation's turns.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Progress phases.
const (
	PhaseWaiting   = "waiting"   // request sent, nothing streamed yet (or a keep-alive arrived)
	PhaseReasoning = "reasoning" // reasoning_content is streaming (never returned)
	PhaseAnswering = "answering" // content is streaming
	PhaseRetrying  = "retrying"  // about to retry; Message says why and how long it waits
)

// ProgressEvery is how many streamed chunks pass between two progress events
// of the same phase.
const ProgressEvery = 16

// ProgressEvent reports how a flash call is going. Tokens counts the streamed
// chunks (about one token each) of reasoning and answer over all attempts of
// the call, so it never decreases.
type ProgressEvent struct {
	Phase   string
	Tokens  int
	Message string
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

// FlashResult is the answer of a flash call; reasoning_content is never part
// of it. Usage and CostUSD cover every attempt the API billed (a blank first
// answer that was retried included); Model is the model the API reported.
type FlashResult struct {
	Answer       string        `json:"answer"`
	Model        string        `json:"model"`
	Thinking     string        `json:"thinking"` // the level asked for (DefaultThinking when none)
	FinishReason string        `json:"finish_reason"`
	Usage        Usage         `json:"usage"`
	CostUSD      float64       `json:"cost_usd"`
	Duration     time.Duration `json:"-"`
	Attempts     int           `json:"-"` // HTTP attempts, retries included

	// ToolCalls are the tool calls of a tool-call turn (deepseek_flash offers
	// no tools, so the Answer then says so instead of being blank).
	ToolCalls []ToolCall `json:"-"`
}

// ToolCall is a tool call the model asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

func (u *Usage) add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.CacheHitTokens += o.CacheHitTokens
	u.CacheMissTokens += o.CacheMissTokens
	u.ReasoningTokens += o.ReasoningTokens
}

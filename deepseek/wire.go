package deepseek

// Wire types of the chat completions API.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	// Thinking turns thinking mode on or off; ReasoningEffort sets its
	// effort (DeepSeek's thinking-mode guide). Neither is sent by default.
	Thinking        *thinkingParam  `json:"thinking,omitempty"`
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	ResponseFormat  *responseFormat `json:"response_format,omitempty"`
}

// responseFormat asks for DeepSeek's JSON output ({"type":"json_object"}).
type responseFormat struct {
	Type string `json:"type"`
}

type thinkingParam struct {
	Type string `json:"type"` // enabled | disabled
}

// thinkingFields maps a thinking level onto the request fields DeepSeek's
// OpenAI format takes: off disables thinking mode, an effort enables it
// with that reasoning_effort, "" sends nothing (thinking on, effort high).
func thinkingFields(level string) (*thinkingParam, string) {
	switch level {
	case "":
		return nil, ""
	case ThinkingOff:
		return &thinkingParam{Type: "disabled"}, ""
	default:
		return &thinkingParam{Type: "enabled"}, level
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// The fields are read for their text only: null and "" mean the same, so
// they are plain strings (a pointer cost an allocation per chunk).
type wireMessage struct {
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens            int64 `json:"prompt_tokens"`
	CompletionTokens        int64 `json:"completion_tokens"`
	TotalTokens             int64 `json:"total_tokens"`
	PromptCacheHitTokens    int64 `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens   int64 `json:"prompt_cache_miss_tokens"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (w wireUsage) usage() Usage {
	u := Usage{
		PromptTokens: w.PromptTokens, CompletionTokens: w.CompletionTokens, TotalTokens: w.TotalTokens,
		CacheHitTokens: w.PromptCacheHitTokens, CacheMissTokens: w.PromptCacheMissTokens,
	}
	if w.CompletionTokensDetails != nil {
		u.ReasoningTokens = w.CompletionTokensDetails.ReasoningTokens
	}
	return u
}

type wireError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

type wireChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta        wireMessage  `json:"delta"`
		Message      *wireMessage `json:"message"`
		FinishReason string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

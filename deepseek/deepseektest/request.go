package deepseektest

import (
	"net/http"
	"strings"
	"time"
)

// Side names the API format a request used.
type Side string

const (
	SideOpenAI    Side = "openai"
	SideAnthropic Side = "anthropic"
)

// Request is one recorded HTTP request.
type Request struct {
	Side     Side
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	JSON     map[string]any // nil when the body was not a JSON object
	Time     time.Time      // when it arrived

	// Scripted is true when the request consumed a scripted turn; false for
	// rejected requests, count_tokens, Anthropic side requests and default
	// answers.
	Scripted bool
	// SideRequest is true for an Anthropic messages request without tools,
	// answered from the side turn (see the package doc).
	SideRequest bool
}

// Model is the requested model id.
func (r Request) Model() string { s, _ := r.JSON["model"].(string); return s }

// Stream reports whether the request asked for a streamed answer.
func (r Request) Stream() bool { b, _ := r.JSON["stream"].(bool); return b }

// HasTools reports whether the request offered the model any tools.
func (r Request) HasTools() bool { ts, _ := r.JSON["tools"].([]any); return len(ts) > 0 }

// MaxTokens is the request's max_tokens (0 when absent).
func (r Request) MaxTokens() int { f, _ := r.JSON["max_tokens"].(float64); return int(f) }

// Messages is the request's messages list.
func (r Request) Messages() []map[string]any {
	raw, _ := r.JSON["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// System is the system prompt: OpenAI system messages or Anthropic `system`
// (string or text blocks), joined by newlines.
func (r Request) System() string {
	if r.Side == SideAnthropic {
		return contentText(r.JSON["system"])
	}
	var parts []string
	for _, m := range r.Messages() {
		if m["role"] == "system" {
			parts = append(parts, contentText(m["content"]))
		}
	}
	return strings.Join(parts, "\n")
}

// LastUserText is the text of the last user message (tool results excluded).
func (r Request) LastUserText() string {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "user" {
			return contentText(msgs[i]["content"])
		}
	}
	return ""
}

// ToolResultTexts returns the texts of the tool results that answer the last
// assistant turn: Anthropic tool_result blocks of the last user message, or
// the OpenAI "tool" messages after the last assistant message.
func (r Request) ToolResultTexts() []string {
	msgs := r.Messages()
	var out []string
	if r.Side == SideAnthropic {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i]["role"] != "user" {
				continue
			}
			blocks, _ := msgs[i]["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] == "tool_result" {
					out = append(out, contentText(bm["content"]))
				}
			}
			return out
		}
		return nil
	}
	for i := len(msgs) - 1; i >= 0 && msgs[i]["role"] == "tool"; i-- {
		out = append([]string{contentText(msgs[i]["content"])}, out...)
	}
	return out
}

// contentText flattens a string or a list of text blocks/parts.
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			pm, _ := p.(map[string]any)
			if t, ok := pm["text"].(string); ok && (pm["type"] == "text" || pm["type"] == nil) {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// ToolNames are the names of the tools the request offered the model.
func (r Request) ToolNames() []string {
	ts, _ := r.JSON["tools"].([]any)
	var out []string
	for _, t := range ts {
		tm, _ := t.(map[string]any)
		if n, ok := tm["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

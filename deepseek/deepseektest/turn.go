package deepseektest

import (
	"encoding/json"
	"fmt"
	"time"
)

// Break makes a turn fail on the wire instead of finishing cleanly.
type Break string

const (
	// BreakMalformed sends the first chunk, then bytes that are not JSON, then
	// ends the response without a terminator.
	BreakMalformed Break = "malformed"
	// BreakCut sends the first chunk, then closes the connection in the middle
	// of the chunked body.
	BreakCut Break = "cut"
	// BreakReset closes the connection (TCP RST) before any response byte.
	BreakReset Break = "reset"
)

// ToolCall is one tool call of a turn: an OpenAI tool_calls entry or an
// Anthropic tool_use block. Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id,omitempty"` // generated when empty
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Call builds a ToolCall; args is marshalled to JSON (a string is taken as
// JSON text as it is). It panics on a value that cannot be marshalled, which
// is a bug in the test that wrote it.
func Call(name string, args any) ToolCall {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case string:
		raw = json.RawMessage(a)
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("deepseektest.Call(%q): %v", name, err))
		}
		raw = b
	}
	return ToolCall{Name: name, Arguments: raw}
}

// Usage is what the double reports a turn cost. InputTokens includes the
// cache hits; OutputTokens includes the reasoning tokens (as DeepSeek counts).
type Usage struct {
	InputTokens     int64 `json:"input_tokens"`
	CacheHitTokens  int64 `json:"cache_hit_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Turn is one scripted answer. The zero Turn answers an empty text; use the
// constructors (Text, ToolCalls, ReasoningOnly, Error, RateLimited, Reset,
// Func) and the With… methods.
type Turn struct {
	Text      string     // answer text (OpenAI content / Anthropic text block)
	Reasoning string     // OpenAI reasoning_content / Anthropic thinking block
	ToolCalls []ToolCall // OpenAI tool_calls / Anthropic tool_use blocks

	// FinishReason overrides the OpenAI finish_reason (and, mapped, the
	// Anthropic stop_reason): stop, length, tool_calls, content_filter…
	FinishReason string

	Status     int    // >= 400: answer this HTTP error instead
	ErrorBody  string // overrides the documented error body of Status
	RetryAfter int    // seconds, sent as Retry-After when > 0

	Delay      time.Duration // before the response starts
	ChunkDelay time.Duration // between stream chunks and keep-alives
	KeepAlives int           // ": keep-alive" lines (Anthropic: ping events) before any data
	Break      Break

	// Unstreamed answers a stream: true request with one application/json
	// chat.completion body, as some OpenAI-compatible gateways do.
	Unstreamed bool

	Usage *Usage // nil: estimated from the request and answer sizes
	Model string // reported model; "" = the requested one

	// Func, when set, is called with the recorded request and its result is
	// served instead (its own Func is ignored).
	Func func(Request) Turn
}

// Text is a plain answer.
func Text(s string) Turn { return Turn{Text: s} }

// Reasoned is an answer preceded by reasoning (thinking) content.
func Reasoned(reasoning, text string) Turn { return Turn{Reasoning: reasoning, Text: text} }

// ToolCalls is a turn that calls tools, with no text (OpenAI content null).
func ToolCalls(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// ReasoningOnly is the turn where reasoning used up max_tokens: blank
// content, finish_reason "length" (Anthropic stop_reason "max_tokens").
func ReasoningOnly(reasoning string) Turn {
	return Turn{Reasoning: reasoning, FinishReason: "length"}
}

// Error answers an HTTP error status with DeepSeek's documented body.
func Error(status int) Turn { return Turn{Status: status} }

// RateLimited answers 429 with Retry-After: seconds.
func RateLimited(retryAfterSeconds int) Turn {
	return Turn{Status: 429, RetryAfter: retryAfterSeconds}
}

// Reset drops the connection before answering.
func Reset() Turn { return Turn{Break: BreakReset} }

// Func answers with whatever f returns for the recorded request.
func Func(f func(r Request) Turn) Turn { return Turn{Func: f} }

// WithReasoning adds reasoning content.
func (t Turn) WithReasoning(r string) Turn { t.Reasoning = r; return t }

// WithUsage sets the reported usage.
func (t Turn) WithUsage(u Usage) Turn { t.Usage = &u; return t }

// WithDelay waits d before the response starts.
func (t Turn) WithDelay(d time.Duration) Turn { t.Delay = d; return t }

// WithChunkDelay waits d between stream chunks.
func (t Turn) WithChunkDelay(d time.Duration) Turn { t.ChunkDelay = d; return t }

// WithKeepAlives sends n keep-alive comments before any data.
func (t Turn) WithKeepAlives(n int) Turn { t.KeepAlives = n; return t }

// WithBreak makes the stream fail on the wire.
func (t Turn) WithBreak(b Break) Turn { t.Break = b; return t }

// WithoutStream answers even a streamed request with one JSON body.
func (t Turn) WithoutStream() Turn { t.Unstreamed = true; return t }

// WithModel reports model instead of the requested one.
func (t Turn) WithModel(m string) Turn { t.Model = m; return t }

func (t Turn) isError() bool { return t.Status >= 400 }

// ScriptTurn is one entry of a JSON script file (see the package doc).
type ScriptTurn struct {
	Side         string     `json:"side,omitempty"` // "openai" (default), "anthropic" or "both"
	Text         string     `json:"text,omitempty"`
	Reasoning    string     `json:"reasoning,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Status       int        `json:"status,omitempty"`
	ErrorBody    string     `json:"error_body,omitempty"`
	RetryAfter   int        `json:"retry_after,omitempty"`
	DelayMS      int        `json:"delay_ms,omitempty"`
	ChunkDelayMS int        `json:"chunk_delay_ms,omitempty"`
	KeepAlives   int        `json:"keep_alives,omitempty"`
	Break        Break      `json:"break,omitempty"`
	Unstreamed   bool       `json:"unstreamed,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	Model        string     `json:"model,omitempty"`
}

// Turn converts a script entry.
func (st ScriptTurn) Turn() Turn {
	return Turn{
		Text: st.Text, Reasoning: st.Reasoning, ToolCalls: st.ToolCalls,
		FinishReason: st.FinishReason, Status: st.Status, ErrorBody: st.ErrorBody,
		RetryAfter: st.RetryAfter, Delay: time.Duration(st.DelayMS) * time.Millisecond,
		ChunkDelay: time.Duration(st.ChunkDelayMS) * time.Millisecond,
		KeepAlives: st.KeepAlives, Break: st.Break, Unstreamed: st.Unstreamed, Usage: st.Usage, Model: st.Model,
	}
}

// ParseScript reads a JSON script (a list of ScriptTurn) into the OpenAI and
// Anthropic queues.
func ParseScript(data []byte) (openai, anthropic []Turn, err error) {
	var entries []ScriptTurn
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, nil, fmt.Errorf("script is not a JSON list of turns: %w", err)
	}
	for i, e := range entries {
		switch e.Break {
		case "", BreakMalformed, BreakCut, BreakReset:
		default:
			return nil, nil, fmt.Errorf("script turn %d: unknown break %q (use malformed, cut or reset)", i, e.Break)
		}
		if e.Status != 0 && (e.Status < 400 || e.Status > 599) {
			return nil, nil, fmt.Errorf("script turn %d: status %d is not an error status (400-599)", i, e.Status)
		}
		for j, c := range e.ToolCalls {
			if c.Name == "" {
				return nil, nil, fmt.Errorf("script turn %d: tool call %d has no name", i, j)
			}
			if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
				return nil, nil, fmt.Errorf("script turn %d: tool call %d arguments are not JSON", i, j)
			}
		}
		t := e.Turn()
		switch e.Side {
		case "", "openai":
			openai = append(openai, t)
		case "anthropic":
			anthropic = append(anthropic, t)
		case "both":
			openai = append(openai, t)
			anthropic = append(anthropic, t)
		default:
			return nil, nil, fmt.Errorf("script turn %d: unknown side %q (use openai, anthropic or both)", i, e.Side)
		}
	}
	return openai, anthropic, nil
}

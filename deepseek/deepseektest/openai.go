package deepseektest

import (
	"io"
	"net/http"
	"time"
)

// handleOpenAI serves POST /chat/completions.
func (s *Server) handleOpenAI(w http.ResponseWriter, r *http.Request) {
	req, idx, ok := s.admit(w, r, SideOpenAI, func(m string) bool { return s.models[m] })
	if !ok {
		return
	}
	if s.missingReasoning(req) {
		writeRaw(w, http.StatusBadRequest, MissingReasoningBody)
		return
	}
	t, model, ok := s.play(w, r, s.take(SideOpenAI, idx, false), req)
	if !ok {
		return
	}
	a := s.openaiAnswer(t, req, model)
	if req.Stream() && !t.Unstreamed {
		s.streamOpenAI(w, r, t, a)
		return
	}
	// Non-streamed: DeepSeek keeps the connection alive with blank lines.
	if t.KeepAlives > 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for range t.KeepAlives {
			sse(w, "\n")
			if !s.wait(r.Context(), t.ChunkDelay) {
				return
			}
		}
		_, _ = io.WriteString(w, mustJSON(a.completion()))
		return
	}
	writeJSON(w, http.StatusOK, a.completion())
}

// missingReasoning reports an assistant tool-call message sent back without
// the reasoning_content that came with it.
func (s *Server) missingReasoning(req Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range req.Messages() {
		if m["role"] != "assistant" {
			continue
		}
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			continue
		}
		if rc, _ := m["reasoning_content"].(string); rc != "" {
			continue
		}
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			if id, _ := cm["id"].(string); s.reasonedCalls[id] {
				return true
			}
		}
	}
	return false
}

// openaiAnswer is one completion, ready to be sent whole or streamed.
type openaiAnswer struct {
	id, model, finish string
	created           int64
	text, reasoning   string
	calls             []ToolCall
	usage             Usage
}

func (s *Server) openaiAnswer(t Turn, req Request, model string) openaiAnswer {
	if req.ThinksAt() == "off" { // thinking disabled: no reasoning is streamed or billed
		t.Reasoning = ""
	}
	a := openaiAnswer{
		id: s.newID("chatcmpl-double-"), model: model, created: time.Now().Unix(),
		text: t.Text, reasoning: t.Reasoning, usage: usageFor(t, req.Body),
		calls: s.toolCalls(t.ToolCalls, "call_double_"),
	}
	if a.reasoning != "" && len(a.calls) > 0 {
		s.mu.Lock()
		for _, c := range a.calls {
			s.reasonedCalls[c.ID] = true
		}
		s.mu.Unlock()
	}
	switch {
	case t.FinishReason != "":
		a.finish = t.FinishReason
	case len(a.calls) > 0:
		a.finish = "tool_calls"
	default:
		a.finish = "stop"
	}
	return a
}

func (a openaiAnswer) usageJSON() map[string]any {
	u := a.usage
	return map[string]any{
		"prompt_tokens":            u.InputTokens,
		"completion_tokens":        u.OutputTokens,
		"total_tokens":             u.InputTokens + u.OutputTokens,
		"prompt_cache_hit_tokens":  u.CacheHitTokens,
		"prompt_cache_miss_tokens": u.InputTokens - u.CacheHitTokens,
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": u.ReasoningTokens,
		},
	}
}

func (a openaiAnswer) toolCallsJSON() []any {
	var out []any
	for i, c := range a.calls {
		out = append(out, map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)},
		})
	}
	return out
}

// completion is the non-streamed chat.completion object.
func (a openaiAnswer) completion() map[string]any {
	msg := map[string]any{"role": "assistant", "content": a.text}
	if a.text == "" && len(a.calls) > 0 {
		msg["content"] = nil
	}
	if a.reasoning != "" {
		msg["reasoning_content"] = a.reasoning
	}
	if len(a.calls) > 0 {
		msg["tool_calls"] = a.toolCallsJSON()
	}
	return map[string]any{
		"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
		"system_fingerprint": "fp_double",
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.finish,
		}},
		"usage": a.usageJSON(),
	}
}

func (a openaiAnswer) chunk(delta map[string]any, finish any, usage any) string {
	c := map[string]any{
		"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
		"system_fingerprint": "fp_double",
		"choices": []any{map[string]any{
			"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish,
		}},
	}
	if usage != nil {
		c["usage"] = usage
	}
	return "data: " + mustJSON(c) + "\n\n"
}

// streamOpenAI sends chat.completion.chunk events: role, reasoning_content
// deltas, content deltas, tool call deltas, the final chunk with
// finish_reason and usage, then [DONE].
func (s *Server) streamOpenAI(w http.ResponseWriter, r *http.Request, t Turn, a openaiAnswer) {
	var blocks []string
	blocks = append(blocks, a.chunk(map[string]any{"role": "assistant", "content": nil, "reasoning_content": ""}, nil, nil))
	for _, p := range chunks(a.reasoning) {
		blocks = append(blocks, a.chunk(map[string]any{"content": nil, "reasoning_content": p}, nil, nil))
	}
	for _, p := range chunks(a.text) {
		blocks = append(blocks, a.chunk(map[string]any{"content": p, "reasoning_content": nil}, nil, nil))
	}
	for i, c := range a.calls {
		blocks = append(blocks, a.chunk(map[string]any{"content": nil, "tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil, nil))
		args := string(c.Arguments)
		for len(args) > 0 {
			n := min(len(args), 16)
			blocks = append(blocks, a.chunk(map[string]any{"content": nil, "tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": args[:n]},
			}}}, nil, nil))
			args = args[n:]
		}
	}
	blocks = append(blocks, a.chunk(map[string]any{"content": ""}, a.finish, a.usageJSON()))
	blocks = append(blocks, "data: [DONE]\n\n")
	s.stream(w, r, t, ": keep-alive\n\n", blocks, "data: {\"id\":\"broken\",\"choices\":[{\x00\xff not json\n\n")
}

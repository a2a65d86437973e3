package deepseektest

import (
	"net/http"
	"strings"
)

// anthropicModelOK follows DeepSeek's Anthropic endpoint: known DeepSeek ids
// and any claude* name (mapped server-side) are accepted; other names get 400.
func (s *Server) anthropicModelOK(m string) bool {
	return s.models[m] || strings.HasPrefix(m, "claude")
}

// handleAnthropic serves POST /anthropic/v1/messages.
func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	req, idx, ok := s.admit(w, r, SideAnthropic, s.anthropicModelOK)
	if !ok {
		return
	}
	t, model, ok := s.play(w, r, s.take(SideAnthropic, idx, s.isSide(req)), req)
	if !ok {
		return
	}
	a := s.anthropicAnswer(t, req, model)
	if req.Stream() {
		s.streamAnthropic(w, r, t, a)
		return
	}
	writeJSON(w, http.StatusOK, a.message())
}

// handleCountTokens serves POST /anthropic/v1/messages/count_tokens with an
// estimate of 4 bytes a token.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	req, _, err := s.record(SideAnthropic, r)
	if ok, msg := s.authorized(r, SideAnthropic); !ok {
		writeJSON(w, http.StatusUnauthorized, deepseekError(msg, "authentication_error"))
		return
	}
	if err != nil || req.JSON == nil {
		writeJSON(w, http.StatusBadRequest, deepseekError("Failed to deserialize the JSON body into the target type", "invalid_request_error"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(req.Body)/4 + 1})
}

type anthropicAnswer struct {
	id, model, stop string
	text, thinking  string
	calls           []ToolCall
	usage           Usage
}

func (s *Server) anthropicAnswer(t Turn, req Request, model string) anthropicAnswer {
	a := anthropicAnswer{
		id: s.newID("msg_double_"), model: model,
		text: t.Text, thinking: t.Reasoning, usage: usageFor(t, req.Body),
		calls: s.toolCalls(t.ToolCalls, "toolu_double_"),
	}
	switch {
	case t.FinishReason == "length":
		a.stop = "max_tokens"
	case t.FinishReason == "tool_calls", t.FinishReason == "" && len(a.calls) > 0:
		a.stop = "tool_use"
	case t.FinishReason == "" || t.FinishReason == "stop":
		a.stop = "end_turn"
	default:
		a.stop = t.FinishReason
	}
	return a
}

// signature is a fake thinking signature (the real one is opaque).
func (a anthropicAnswer) signature() string { return "double-signature-" + a.id }

func (a anthropicAnswer) startUsage() map[string]any {
	u := a.usage
	return map[string]any{
		"input_tokens":                u.InputTokens - u.CacheHitTokens,
		"cache_read_input_tokens":     u.CacheHitTokens,
		"cache_creation_input_tokens": 0,
		"output_tokens":               0,
	}
}

func (a anthropicAnswer) finalUsage() map[string]any {
	u := a.startUsage()
	u["output_tokens"] = a.usage.OutputTokens
	return u
}

func (a anthropicAnswer) message() map[string]any {
	var content []any
	if a.thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": a.thinking, "signature": a.signature()})
	}
	if a.text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.text})
	}
	for _, c := range a.calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": content, "stop_reason": a.stop, "stop_sequence": nil, "usage": a.finalUsage(),
	}
}

func event(name string, v any) string {
	return "event: " + name + "\ndata: " + mustJSON(v) + "\n\n"
}

// streamAnthropic sends message_start, one content block per thinking, text
// and tool_use (start, deltas, stop), message_delta with the stop_reason and
// usage, and message_stop.
func (s *Server) streamAnthropic(w http.ResponseWriter, r *http.Request, t Turn, a anthropicAnswer) {
	start := map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": a.startUsage(),
	}
	blocks := []string{event("message_start", map[string]any{"type": "message_start", "message": start})}
	index := 0
	delta := func(d map[string]any) string {
		return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
	}
	open := func(cb map[string]any) string {
		return event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": cb})
	}
	closeBlock := func() string {
		e := event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
		return e
	}
	if a.thinking != "" {
		blocks = append(blocks, open(map[string]any{"type": "thinking", "thinking": "", "signature": ""}))
		for _, p := range chunks(a.thinking) {
			blocks = append(blocks, delta(map[string]any{"type": "thinking_delta", "thinking": p}))
		}
		blocks = append(blocks, delta(map[string]any{"type": "signature_delta", "signature": a.signature()}))
		blocks = append(blocks, closeBlock())
	}
	if a.text != "" {
		blocks = append(blocks, open(map[string]any{"type": "text", "text": ""}))
		for _, p := range chunks(a.text) {
			blocks = append(blocks, delta(map[string]any{"type": "text_delta", "text": p}))
		}
		blocks = append(blocks, closeBlock())
	}
	for _, c := range a.calls {
		blocks = append(blocks, open(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}))
		args := string(c.Arguments)
		for len(args) > 0 {
			n := min(len(args), 16)
			blocks = append(blocks, delta(map[string]any{"type": "input_json_delta", "partial_json": args[:n]}))
			args = args[n:]
		}
		blocks = append(blocks, closeBlock())
	}
	blocks = append(blocks,
		event("message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil},
			"usage": a.finalUsage(),
		}),
		event("message_stop", map[string]any{"type": "message_stop"}),
	)
	s.stream(w, r, t, event("ping", map[string]any{"type": "ping"}), blocks, "event: content_block_delta\ndata: {\"type\":\x00\xff not json\n\n")
}

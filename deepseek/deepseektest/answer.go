package deepseektest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// play resolves a taken turn, waits out its delay and answers its break or
// error. Otherwise it returns the turn and the model to answer with (the
// turn's, else the requested one); ok is false when it has answered the
// request or the request or the server ended during the delay.
func (s *Server) play(w http.ResponseWriter, r *http.Request, taken Turn, req Request) (t Turn, model string, ok bool) {
	t = resolve(taken, req)
	if !s.wait(r.Context(), s.delay+t.Delay) {
		return t, "", false
	}
	if t.Break == BreakReset {
		reset(w)
		return t, "", false
	}
	if t.isError() {
		writeErrorTurn(w, t)
		return t, "", false
	}
	model = t.Model
	if model == "" {
		model = req.Model()
	}
	return t, model, true
}

// wait sleeps d unless the request or the server ends first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// chunks splits text into word-sized stream pieces.
func chunks(text string) []string {
	if text == "" {
		return nil
	}
	parts := strings.SplitAfter(text, " ")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// usageFor is the scripted usage or an estimate from sizes (4 bytes a token).
func usageFor(t Turn, body []byte) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	args := 0
	for _, c := range t.ToolCalls {
		args += len(c.Name) + len(c.Arguments)
	}
	u := Usage{
		InputTokens:  int64(len(body)/4 + 1),
		OutputTokens: int64((len(t.Text)+len(t.Reasoning)+args)/4 + 1),
	}
	if t.Reasoning != "" {
		u.ReasoningTokens = int64(len(t.Reasoning)/4 + 1)
	}
	return u
}

// sse writes one SSE block and flushes.
func sse(w http.ResponseWriter, block string) {
	_, _ = io.WriteString(w, block)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// toolCalls copies a turn's tool calls for an answer: a call without an id
// gets a fresh one with prefix, a call without arguments gets {}.
func (s *Server) toolCalls(calls []ToolCall, prefix string) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		if c.ID == "" {
			c.ID = s.newID(prefix)
		}
		if len(c.Arguments) == 0 {
			c.Arguments = []byte(`{}`)
		}
		out = append(out, c)
	}
	return out
}

// stream sends a streamed answer: the SSE headers, an empty first write,
// t.KeepAlives keepAlive blocks, then blocks, each after t.ChunkDelay. After
// the first block, t.Break sends malformed and ends, or cuts the connection.
// It returns early when the request or the server ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, t Turn, keepAlive string, blocks []string, malformed string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "")
	for range t.KeepAlives {
		sse(w, keepAlive)
		if !s.wait(r.Context(), t.ChunkDelay) {
			return
		}
	}
	for i, b := range blocks {
		if i > 0 && !s.wait(r.Context(), t.ChunkDelay) {
			return
		}
		sse(w, b)
		if i == 0 {
			switch t.Break {
			case BreakMalformed:
				sse(w, malformed)
				return
			case BreakCut:
				cut(w)
				return
			}
		}
	}
}

package modelproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The output cap of one response. A request's max_tokens bounds what the
// upstream may write, and the proxy holds it to that: N tokens come as at most
// N stream events of about 120 bytes of JSON around a token of a few dozen
// bytes at most (escaped twice in a tool call's partial_json), so 512 bytes
// a token is more than double the worst of them; capSlack covers the events
// that carry no token (message_start, pings, the usage). A request that names
// no max_tokens, or more than capMaxTokens, is held to capMaxTokens: twice the
// most any DeepSeek model writes in one answer (64K tokens). The answer
// passes through as it comes, so these bound how long it may run, not what
// the proxy holds: that is one event, at most maxRelayEvent.
const (
	capBytesPerToken = 512
	capSlack         = 1 << 20
	capMaxTokens     = 1 << 17
	maxRelayEvent    = 4 << 20 // a streamed event carries a few tokens
)

// responseCap is the most bytes the answer to a request naming maxTokens may
// have: maxTokens × 512 + 1 MiB (about 17 MiB for Claude Code's 32000).
func responseCap(maxTokens int64) int64 {
	if maxTokens <= 0 || maxTokens > capMaxTokens {
		maxTokens = capMaxTokens
	}
	return maxTokens*capBytesPerToken + capSlack
}

// requestFields reads what the proxy uses of a Messages request: its model
// and max_tokens ("" and 0 when absent, of another type, or not JSON). Each
// is decoded on its own, so an odd max_tokens does not hide the model.
func requestFields(body []byte) (model string, maxTokens int64) {
	var m struct {
		Model     json.RawMessage `json:"model"`
		MaxTokens json.RawMessage `json:"max_tokens"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", 0
	}
	_ = json.Unmarshal(m.Model, &model)
	var n float64
	if json.Unmarshal(m.MaxTokens, &n) == nil && n >= 1 {
		maxTokens = int64(min(n, 1<<53))
	}
	return model, maxTokens
}

// eventFramer passes an SSE stream on in whole events within the output
// cap, so an answer cut off ends between two events and the error event that
// follows it parses. It holds one unfinished event, at most maxRelayEvent.
type eventFramer struct {
	maxTokens int64  // the request's max_tokens (0: none)
	limit     int64  // responseCap(maxTokens)
	sent      int64  // bytes passed on
	buf       []byte // bytes read and not passed on yet; buf[:out] went out last
	out       int
	scanned   int // bytes of buf already searched for line ends
	lineStart int // where the line being read starts in buf
}

func newEventFramer(maxTokens int64) *eventFramer {
	return &eventFramer{maxTokens: maxTokens, limit: responseCap(maxTokens)}
}

// feed takes the next bytes read and returns the events they complete, to
// pass on now; the slice is valid until the next call. A non-empty over says
// what crossed the cap or maxRelayEvent: nothing more may pass on.
func (f *eventFramer) feed(b []byte) (events []byte, over string) {
	if f.out > 0 { // drop what went out last time
		f.buf = f.buf[:copy(f.buf, f.buf[f.out:])]
		f.scanned -= f.out
		f.lineStart -= f.out
		f.out = 0
	}
	f.buf = append(f.buf, b...)
	end := 0 // the end of the last complete event
	for f.scanned < len(f.buf) {
		i := bytes.IndexByte(f.buf[f.scanned:], '\n')
		if i < 0 {
			f.scanned = len(f.buf)
			break
		}
		nl := f.scanned + i
		if line := f.buf[f.lineStart:nl]; len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			end = nl + 1 // a blank line ends an event
		}
		f.lineStart, f.scanned = nl+1, nl+1
	}
	if len(f.buf)-end > maxRelayEvent {
		return nil, fmt.Sprintf("the upstream sent more than the output cap allows: one event of the answer passed %d bytes "+
			"(a streamed event carries a few tokens); the model proxy cut the answer off", maxRelayEvent)
	}
	if f.sent+int64(len(f.buf)) > f.limit {
		return nil, overCap(f.limit, f.maxTokens)
	}
	f.sent += int64(end)
	f.out = end
	return f.buf[:end], ""
}

// rest is what a stream that ended left after its last complete event.
func (f *eventFramer) rest() []byte { return f.buf[f.out:] }

// overCap says why an answer of more than limit bytes was cut off.
func overCap(limit, maxTokens int64) string {
	asked := fmt.Sprintf("max_tokens=%d", maxTokens)
	if maxTokens == 0 {
		asked = "a request naming no max_tokens"
	}
	return fmt.Sprintf("the upstream sent more than the output cap allows: the answer passed %d bytes, more than %s can produce "+
		"(%d bytes a token + %d KiB, for at most %d tokens); the model proxy cut it off",
		limit, asked, capBytesPerToken, capSlack>>10, capMaxTokens)
}

// errorEvent is the Anthropic SSE error event carrying msg.
func errorEvent(msg string) []byte {
	data, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": errAPI, "message": msg},
	})
	return append(append([]byte("event: error\ndata: "), data...), "\n\n"...)
}

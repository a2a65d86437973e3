package modelproxy

import (
	"bytes"
	"cmp"
	"encoding/json"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// Usage is what one job (or one day) has consumed through the proxy.
//
// InputTokens is the input not served from DeepSeek's cache: Anthropic's
// input_tokens plus cache_creation_input_tokens (DeepSeek bills both as a
// cache miss). CacheReadTokens is cache_read_input_tokens (a cache hit).
// ThinkingTokens is reported only when the upstream reports it, and is already
// inside OutputTokens, as DeepSeek bills it as output.
type Usage struct {
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CacheReadTokens int64   `json:"cache_read_tokens"`
	ThinkingTokens  int64   `json:"thinking_tokens"`
	CostUSD         float64 `json:"cost_usd"`
	// Requests counts model calls that reached the upstream and were answered;
	// Retries counts the extra upstream attempts the proxy made for them.
	Requests int64 `json:"requests"`
	Retries  int64 `json:"retries"`
	// LastUpstreamError is the class of DeepSeek's last answer to the job
	// when it was an error (result.errClass); a job's usage only, never the day's.
	LastUpstreamError string `json:"-"`
}

// TotalTokens is every token the job was billed for: input (hit and miss) and
// output. BRIDGE_JOB_MAX_TOKENS is compared with it.
func (u Usage) TotalTokens() int64 { return u.InputTokens + u.CacheReadTokens + u.OutputTokens }

// addTokens adds one response's counts to u (cost is not touched).
func (u *Usage) addTokens(c counts) {
	u.InputTokens += c.Input + c.CacheCreation
	u.OutputTokens += c.Output
	u.CacheReadTokens += c.CacheRead
	u.ThinkingTokens += c.Thinking
}

// counts are the token numbers of one response.
type counts struct {
	Input, Output, CacheRead, CacheCreation, Thinking int64
}

func (c counts) zero() bool { return c == counts{} }

// cost prices c at p.
func (c counts) cost(p deepseek.Price) float64 {
	return p.Cost(c.CacheRead, c.Input+c.CacheCreation, c.Output)
}

// merge keeps the larger value of every field. Anthropic's message_delta usage
// is cumulative ("the token counts … are cumulative"), and may repeat or omit
// fields message_start already gave; taking the maximum per field is right for
// both and never double-counts.
func (c *counts) merge(o counts) {
	c.Input = max(c.Input, o.Input)
	c.Output = max(c.Output, o.Output)
	c.CacheRead = max(c.CacheRead, o.CacheRead)
	c.CacheCreation = max(c.CacheCreation, o.CacheCreation)
	c.Thinking = max(c.Thinking, o.Thinking)
}

// wireUsage is an Anthropic usage block. Thinking tokens have no standard
// field in the Anthropic format; the known variants are accepted.
type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	ThinkingTokens           int64 `json:"thinking_tokens"`
	ReasoningTokens          int64 `json:"reasoning_tokens"`
	OutputTokensDetails      struct {
		ThinkingTokens  int64 `json:"thinking_tokens"`
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (w *wireUsage) counts() counts {
	if w == nil {
		return counts{}
	}
	return counts{
		Input:         w.InputTokens,
		Output:        w.OutputTokens,
		CacheRead:     w.CacheReadInputTokens,
		CacheCreation: w.CacheCreationInputTokens,
		Thinking: max(w.ThinkingTokens, w.ReasoningTokens,
			w.OutputTokensDetails.ThinkingTokens, w.OutputTokensDetails.ReasoningTokens),
	}
}

// messageUsage reads the usage and the answering model of a non-streamed
// Messages response.
func messageUsage(body []byte) (counts, string) {
	var m struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	}
	if json.Unmarshal(body, &m) != nil {
		return counts{}, ""
	}
	return m.Usage.counts(), m.Model
}

// priceOf is the price of one answer by price: the model the answer names
// (what DeepSeek billed), else the one the request named, else the
// configured one.
func priceOf(price func(string) deepseek.Price, answer, request, configured string) deepseek.Price {
	return price(cmp.Or(answer, request, configured))
}

// price is Options.Price, or deepseek.PriceFor when unset.
func (p *Proxy) price() func(string) deepseek.Price {
	if p.opts.Price != nil {
		return p.opts.Price
	}
	return deepseek.PriceFor
}

// Limits of the SSE reader used for accounting. Usage events are small; a
// line or an event's data longer than maxSSELine (a huge text delta) is
// passed through to the client untouched and only skipped by the accounting.
const maxSSELine = 1 << 20

// sseUsage watches an Anthropic SSE stream as it passes through and keeps the
// usage it announces (message_start, message_delta). It never holds more than
// one line and one event's data, each at most maxSSELine.
type sseUsage struct {
	line     []byte
	skipping bool // inside an over-long line
	event    string
	data     []byte
	total    counts
	model    string // the model message_start names
	errType  string // type of an in-stream `error` event, if one came
}

// Write feeds the next bytes of the stream.
func (s *sseUsage) Write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.appendLine(b)
			return
		}
		s.appendLine(b[:i])
		b = b[i+1:]
		if s.skipping {
			s.skipping = false
			s.line = s.line[:0]
			continue
		}
		s.handleLine(bytes.TrimSuffix(s.line, []byte{'\r'}))
		s.line = s.line[:0]
	}
}

func (s *sseUsage) appendLine(b []byte) {
	if s.skipping {
		return
	}
	if len(s.line)+len(b) > maxSSELine {
		s.skipping = true
		s.data = nil // the event this line belonged to cannot be parsed
		s.event = "skip"
		return
	}
	s.line = append(s.line, b...)
}

func (s *sseUsage) handleLine(line []byte) {
	switch {
	case len(line) == 0:
		s.dispatch()
	case line[0] == ':': // comment (keep-alive)
	case bytes.HasPrefix(line, []byte("event:")):
		s.event = string(bytes.TrimSpace(line[len("event:"):]))
	case bytes.HasPrefix(line, []byte("data:")):
		if s.event == "skip" {
			return
		}
		d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(s.data)+1+len(d) > maxSSELine {
			s.data = nil // data lines with no blank line between them: not an event to parse
			s.event = "skip"
			return
		}
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, d...)
	}
}

// Close ends the stream: an event without its final blank line still counts.
func (s *sseUsage) Close() {
	if len(s.line) > 0 && !s.skipping {
		s.handleLine(bytes.TrimSuffix(s.line, []byte{'\r'}))
	}
	s.line = nil
	s.dispatch()
}

func (s *sseUsage) dispatch() {
	event, data := s.event, s.data
	s.event, s.data = "", s.data[:0]
	if event == "skip" || len(data) == 0 || !bytes.Contains(data, []byte(`"`)) {
		return
	}
	// Only events that can carry usage or an error are decoded.
	if !bytes.Contains(data, []byte(`"usage"`)) && !bytes.Contains(data, []byte(`"error"`)) {
		return
	}
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Model string     `json:"model"`
			Usage *wireUsage `json:"usage"`
		} `json:"message"`
		Usage *wireUsage `json:"usage"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		s.total.merge(ev.Message.Usage.counts())
		if ev.Message.Model != "" {
			s.model = ev.Message.Model
		}
	case "message_delta":
		s.total.merge(ev.Usage.counts())
	case "error":
		s.errType = ev.Error.Type
	}
}

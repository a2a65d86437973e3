package deepseek

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/segmentio/encoding/json"
)

// decodeChunk decodes one chunk of an answer. segmentio's decoder takes the
// same input as encoding/json's and gives the same values
// (FuzzChunkDecodeMatchesEncodingJSON), in one pass: encoding/json's
// Unmarshal scans the whole input once to validate it before it decodes,
// which was a third of the bridge's decoding CPU. Strings are copied out of
// the payload (no ZeroCopy), which readStream reuses for the next event.
var decodeChunk = json.Unmarshal

// The output cap. N output tokens (max_tokens, DEEPSEEK_MAX_OUTPUT_TOKENS)
// decode to at most N × capBytesPerToken bytes: the longest tokens of a
// byte-level vocabulary like DeepSeek's are runs of spaces or punctuation a
// few dozen bytes long, and real text averages about 4 bytes a token, so a
// real answer stays far below it. capSlack keeps a small max_tokens from
// cutting an answer an upstream counts a little differently. One line or
// event carries JSON around its text, so it
// may be eventSlack bigger; a streamed event holds a few tokens, and even a
// whole answer sent as one event, JSON-escaped, fits in the margin.
const (
	capBytesPerToken = 64
	capSlack         = 1 << 20
	eventSlack       = 64 << 10
)

// OutputCap is the most bytes of reasoning, answer and tool-call arguments
// together that one attempt with maxTokens output tokens may stream:
// maxTokens × 64 + 1 MiB (1.25 MiB at the default 4096). Past it the call
// ends with ErrOverOutputCap.
func OutputCap(maxTokens int) int { return max(maxTokens, 0)*capBytesPerToken + capSlack }

// eventCap bounds one line and one event of the stream.
func eventCap(maxTokens int) int { return OutputCap(maxTokens) + eventSlack }

// progress turns stream events into ProgressEvents.
type progress struct {
	fn     func(ProgressEvent)
	phase  string
	tokens int // all chunks of the call
	inRun  int // chunks since the last event of this phase
}

func (p *progress) emit(phase, msg string) {
	p.phase, p.inRun = phase, 0
	if p.fn != nil {
		p.fn(ProgressEvent{Phase: phase, Tokens: p.tokens, Message: msg})
	}
}

func (p *progress) chunk(phase string) {
	p.tokens++
	p.inRun++
	if phase != p.phase {
		p.emit(phase, "")
		return
	}
	if p.inRun >= ProgressEvery {
		p.emit(phase, "")
	}
}

// turn is what one attempt produced.
type turn struct {
	// maxTokens is the request's max_tokens: it sets the output cap.
	maxTokens int
	// streamed counts the bytes of reasoning, answer and tool-call arguments
	// so far, checked against OutputCap. Reasoning is never returned, so it
	// is only counted.
	streamed  int
	content   strings.Builder
	toolCalls []ToolCall
	args      []strings.Builder // the arguments of toolCalls, joined at the end
	finish    string
	model     string
	usage     Usage
	done      bool // [DONE] seen
}

func (t *turn) blank() bool {
	return strings.TrimSpace(t.content.String()) == "" && len(t.toolCalls) == 0
}

// readStream parses the SSE stream: comment lines are keep-alives, data lines
// carry chunks, a blank line ends an event, "data: [DONE]" ends the stream.
// It runs once per chunk of every answer (one per token or so from
// DeepSeek), so it reads lines in place and decodes each event from one
// reused buffer: no copy of a line or a payload per chunk.
//
// Memory stays bounded whatever the upstream sends: a line and an event are
// bounded by eventCap, the answer, reasoning and tool arguments together by
// OutputCap; past either the stream ends with ErrOverOutputCap.
func (t *turn) readStream(r io.Reader, p *progress) error {
	defer t.joinToolArgs()
	maxEvent := eventCap(t.maxTokens)
	lr := lineReader{br: bufio.NewReader(r), max: maxEvent} // 4 KiB; longer lines are joined
	var payload []byte                                      // the event's data lines, joined with "\n"
	inEvent := false                                        // a data line was seen since the last dispatch
	dispatch := func() error {
		if !inEvent {
			return nil
		}
		inEvent = false
		defer func() { payload = payload[:0] }()
		if bytes.Equal(bytes.TrimSpace(payload), doneMarker) {
			t.done = true
			return nil
		}
		var ch wireChunk
		if err := decodeChunk(payload, &ch); err != nil {
			return fmt.Errorf("%w: malformed bytes in the answer stream: %v", ErrUpstream, err)
		}
		return t.apply(&ch, p)
	}
	for !t.done {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if derr := dispatch(); derr != nil {
					return derr
				}
				if t.done || t.finish != "" {
					return nil
				}
				return fmt.Errorf("%w: the answer stream ended before the answer was complete", ErrUpstream)
			}
			if errors.Is(err, errLineTooLong) {
				return t.overCap("one line of the answer stream", maxEvent, eventSlack)
			}
			return fmt.Errorf("%w: the answer stream broke off: %v", ErrUpstream, err)
		}
		switch {
		case len(line) == 0:
			if err := dispatch(); err != nil {
				return err
			}
		case line[0] == ':':
			p.emit(PhaseWaiting, "DeepSeek is busy; the connection is kept alive")
		case bytes.HasPrefix(line, dataField):
			if inEvent {
				payload = append(payload, '\n')
			}
			inEvent = true
			v := line[len(dataField):]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if len(payload)+len(v) > maxEvent {
				return t.overCap("one event of the answer stream (data lines with no blank line between them)", maxEvent, eventSlack)
			}
			payload = append(payload, v...)
		}
	}
	return nil
}

// readWhole reads an answer sent as one chat.completion object instead of a
// stream (Content-Type application/json), bounded like one event of a
// stream. Leading blank lines (DeepSeek's keep-alives of an unstreamed
// answer) are whitespace to the decoder.
func (t *turn) readWhole(r io.Reader, p *progress) error {
	maxBody := eventCap(t.maxTokens)
	b, err := io.ReadAll(io.LimitReader(r, int64(maxBody)+1))
	if err != nil {
		return fmt.Errorf("%w: the answer broke off: %v", ErrUpstream, err)
	}
	if len(b) > maxBody {
		return t.overCap("the answer (one application/json body)", maxBody, eventSlack)
	}
	var ch wireChunk
	if err := decodeChunk(b, &ch); err != nil {
		return fmt.Errorf("%w: the answer (one application/json body) is not a chat completion: %v", ErrUpstream, err)
	}
	if err := t.apply(&ch, p); err != nil {
		return err
	}
	t.done = true
	return nil
}

var (
	dataField  = []byte("data:")
	doneMarker = []byte("[DONE]")
)

// errLineTooLong: a line passed lineReader.max.
var errLineTooLong = errors.New("a stream line is too long")

// lineReader reads lines without their line ending ("\n" or "\r\n"), of at
// most max bytes (errLineTooLong past that, having held no more than max plus
// two buffers). A line that fits the bufio.Reader's buffer is returned in
// place, without a copy; every line is valid only until the next call.
type lineReader struct {
	br   *bufio.Reader
	max  int
	long []byte // joins the fragments of a line longer than the buffer
}

func (l *lineReader) next() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	switch {
	case err == nil:
		return l.bounded(trimEOL(line))
	case !errors.Is(err, bufio.ErrBufferFull):
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return l.bounded(line) // the last line, with no line ending
		}
		return nil, err
	}
	l.long = append(l.long[:0], line...)
	for {
		line, err = l.br.ReadSlice('\n')
		l.long = append(l.long, line...)
		if len(l.long) > l.max+2 { // too long with any line ending
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			return l.bounded(trimEOL(l.long))
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return l.bounded(l.long)
		default:
			return nil, err
		}
	}
}

func (l *lineReader) bounded(line []byte) ([]byte, error) {
	if len(line) > l.max {
		return nil, errLineTooLong
	}
	return line, nil
}

// trimEOL drops a final "\n" and the "\r" before it.
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// apply folds one chunk (or a whole completion) into the turn.
func (t *turn) apply(ch *wireChunk, p *progress) error {
	if ch.Error != nil {
		return fmt.Errorf("%w: DeepSeek reported an error inside the answer stream: %s", ErrUpstream, ch.Error.Message)
	}
	if ch.Model != "" {
		t.model = ch.Model
	}
	if ch.Usage != nil {
		t.usage = ch.Usage.usage()
	}
	for _, choice := range ch.Choices {
		m := choice.Delta
		if choice.Message != nil {
			m = *choice.Message
		}
		if m.ReasoningContent != "" {
			if err := t.count(len(m.ReasoningContent)); err != nil {
				return err
			}
			p.chunk(PhaseReasoning)
		}
		if m.Content != "" {
			if err := t.count(len(m.Content)); err != nil {
				return err
			}
			t.content.WriteString(m.Content)
			p.chunk(PhaseAnswering)
		}
		for _, tc := range m.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxToolCalls {
				return fmt.Errorf("%w: the answer stream has a tool call index %d out of range", ErrUpstream, tc.Index)
			}
			if err := t.count(len(tc.Function.Arguments)); err != nil {
				return err
			}
			for len(t.toolCalls) <= tc.Index {
				t.toolCalls = append(t.toolCalls, ToolCall{})
				t.args = append(t.args, strings.Builder{})
			}
			dst := &t.toolCalls[tc.Index]
			if tc.ID != "" {
				dst.ID = tc.ID
			}
			if tc.Function.Name != "" {
				dst.Name = tc.Function.Name
			}
			t.args[tc.Index].WriteString(tc.Function.Arguments)
		}
		if choice.FinishReason != "" {
			t.finish = choice.FinishReason
		}
	}
	return nil
}

// count adds n streamed bytes, failing once they pass the output cap.
func (t *turn) count(n int) error {
	t.streamed += n
	if limit := OutputCap(t.maxTokens); t.streamed > limit {
		return t.overCap("the reasoning, answer and tool-call arguments", limit, 0)
	}
	return nil
}

// overCap is the error of a stream that passed limit bytes in what; extra is
// the part of limit beyond OutputCap.
func (t *turn) overCap(what string, limit, extra int) error {
	how := fmt.Sprintf("%d bytes a token + %d KiB", capBytesPerToken, capSlack>>10)
	if extra > 0 {
		how += fmt.Sprintf(", + %d KiB for the JSON around them", extra>>10)
	}
	return fmt.Errorf("%w: %s passed %d bytes, more than DEEPSEEK_MAX_OUTPUT_TOKENS=%d tokens can produce (%s); the call was cut off and not retried. An upstream that honours max_tokens never sends this much: check DEEPSEEK_BASE_URL",
		ErrOverOutputCap, what, limit, t.maxTokens, how)
}

// joinToolArgs sets each tool call's Arguments from its pieces (joined once,
// not by appending strings per chunk).
func (t *turn) joinToolArgs() {
	for i := range t.args {
		t.toolCalls[i].Arguments = t.args[i].String()
	}
}

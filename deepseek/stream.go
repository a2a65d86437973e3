package deepseek

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

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
	content, reasoning strings.Builder
	toolCalls          []ToolCall
	finish, model      string
	usage              Usage
	done               bool // [DONE] seen
}

func (t *turn) blank() bool {
	return strings.TrimSpace(t.content.String()) == "" && len(t.toolCalls) == 0
}

// readStream parses the SSE stream: comment lines are keep-alives, data lines
// carry chunks, a blank line ends an event, "data: [DONE]" ends the stream.
// It runs once per chunk of every answer (one per token or so from
// DeepSeek), so it reads lines in place and decodes each event from one
// reused buffer: no copy of a line or a payload per chunk.
func (t *turn) readStream(r io.Reader, p *progress) error {
	lr := lineReader{br: bufio.NewReader(r)} // 4 KiB; longer lines are joined
	var payload []byte                       // the event's data lines, joined with "\n"
	inEvent := false                         // a data line was seen since the last dispatch
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
		if err := json.Unmarshal(payload, &ch); err != nil {
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
			payload = append(payload, v...)
		}
	}
	return nil
}

var (
	dataField  = []byte("data:")
	doneMarker = []byte("[DONE]")
)

// lineReader reads lines without their line ending ("\n" or "\r\n"),
// bounded by maxStreamLine. A line that fits the bufio.Reader's buffer is
// returned in place, without a copy; every line is valid only until the next
// call.
type lineReader struct {
	br   *bufio.Reader
	long []byte // joins the fragments of a line longer than the buffer
}

func (l *lineReader) next() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if err == nil {
		return trimEOL(line), nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return line, nil // the last line, with no line ending
		}
		return nil, err
	}
	l.long = append(l.long[:0], line...)
	for {
		line, err = l.br.ReadSlice('\n')
		l.long = append(l.long, line...)
		if len(l.long) > maxStreamLine+2 && len(trimEOL(l.long)) > maxStreamLine {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", maxStreamLine)
		}
		switch {
		case err == nil:
			return trimEOL(l.long), nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return l.long, nil
		default:
			return nil, err
		}
	}
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
		if m.ReasoningContent != nil && *m.ReasoningContent != "" {
			t.reasoning.WriteString(*m.ReasoningContent)
			p.chunk(PhaseReasoning)
		}
		if m.Content != nil && *m.Content != "" {
			t.content.WriteString(*m.Content)
			p.chunk(PhaseAnswering)
		}
		for _, tc := range m.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxToolCalls {
				return fmt.Errorf("%w: the answer stream has a tool call index %d out of range", ErrUpstream, tc.Index)
			}
			for len(t.toolCalls) <= tc.Index {
				t.toolCalls = append(t.toolCalls, ToolCall{})
			}
			dst := &t.toolCalls[tc.Index]
			if tc.ID != "" {
				dst.ID = tc.ID
			}
			if tc.Function.Name != "" {
				dst.Name = tc.Function.Name
			}
			dst.Arguments += tc.Function.Arguments
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			t.finish = *choice.FinishReason
		}
	}
	return nil
}

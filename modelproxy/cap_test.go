package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/heapwatch"
)

func TestRequestFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body      string
		model     string
		maxTokens int64
	}{
		{`{"model":"deepseek-flash","max_tokens":32000}`, "deepseek-flash", 32000},
		{`{"model":"deepseek-flash"}`, "deepseek-flash", 0},
		{`{"model":"deepseek-flash","max_tokens":"lots"}`, "deepseek-flash", 0},
		{`{"model":7,"max_tokens":64}`, "", 64},
		{`{"max_tokens":-5}`, "", 0},
		{`{"max_tokens":1e30}`, "", 1 << 53},
		{`not json`, "", 0},
	}
	for _, tc := range cases {
		model, maxTokens := requestFields([]byte(tc.body))
		if model != tc.model || maxTokens != tc.maxTokens {
			t.Errorf("%s: model %q max_tokens %d, want %q %d", tc.body, model, maxTokens, tc.model, tc.maxTokens)
		}
	}
	for maxTokens, want := range map[int64]int64{
		32000:   32000*512 + 1<<20,
		1:       512 + 1<<20,
		0:       capMaxTokens*512 + 1<<20, // none named: the most any DeepSeek model writes, twice
		1 << 53: capMaxTokens*512 + 1<<20,
	} {
		if got := responseCap(maxTokens); got != want {
			t.Errorf("responseCap(%d) = %d, want %d", maxTokens, got, want)
		}
	}
}

// FuzzEventFramer: however the stream is split, what passes on is the same
// whole events in order, each batch ending on a blank line, and the rest is
// what follows the last of them; a stream longer than the cap is cut with
// no more than the cap passed on.
func FuzzEventFramer(f *testing.F) {
	f.Add([]byte(sampleStream), uint(7), int64(64))
	f.Add([]byte("data: a\r\n\r\ndata: b\n\ndata: c"), uint(1), int64(1))
	f.Add([]byte("\n\n\r\n"), uint(2), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint, maxTokens int64) {
		lastEnd := 0 // where the last complete event of data ends
		for i := range data {
			if data[i] == '\n' && (i == 0 || data[i-1] == '\n' || data[i-1] == '\r' && (i == 1 || data[i-2] == '\n')) {
				lastEnd = i + 1
			}
		}
		ef := newEventFramer(maxTokens)
		var got []byte
		step := int(split%64) + 1
		for b := data; len(b) > 0; {
			n := min(step, len(b))
			events, over := ef.feed(b[:n])
			b = b[n:]
			if over != "" {
				if int64(len(got)) > ef.limit || !strings.Contains(over, "the upstream sent more than the output cap allows") {
					t.Fatalf("cut with %d bytes passed (cap %d): %s", len(got), ef.limit, over)
				}
				return
			}
			if len(events) > 0 {
				last := bytes.TrimSuffix(bytes.TrimSuffix(events, []byte("\n")), []byte("\r"))
				if len(last) == len(events) || len(last) > 0 && last[len(last)-1] != '\n' {
					t.Fatalf("a batch ends inside an event: %q", events)
				}
			}
			got = append(got, events...)
		}
		if !bytes.Equal(got, data[:lastEnd]) || !bytes.Equal(ef.rest(), data[lastEnd:]) {
			t.Fatalf("passed %q and kept %q of %q", got, ef.rest(), data)
		}
	})
}

// endlessAnthropic is an upstream Messages endpoint whose answer never ends:
// head once, then chunk repeated until the client hangs up or 1 GiB went out.
func endlessAnthropic(contentType, head, chunk string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		rc := http.NewResponseController(w)
		io.WriteString(w, head)
		buf := []byte(strings.Repeat(chunk, max(1, 64<<10/len(chunk))))
		for sent := 0; sent < 1<<30; sent += len(buf) {
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// TestEndlessAnswerIsCutOff: an upstream that streams text or thinking
// forever, data lines with no blank line, one endless line, or a JSON answer
// that never ends gets its answer cut off at the output cap of the request's
// max_tokens, ended with an error the harness can parse, after one upstream
// request; what was read before the cut is still accounted, and the heap in
// use does not follow the stream. Not parallel: HeapInuse is process-wide.
func TestEndlessAnswerIsCutOff(t *testing.T) {
	piece := strings.Repeat("x", 1000)
	start := "event: message_start\ndata: " + mustJSON(turnEvents(usageBlock{Input: 100, Output: 1}, 0, "")[0].data) + "\n\n"
	delta := func(typ, field string) string {
		return `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"` + typ + `","` + field + `":"` + piece + `"}}` + "\n\n"
	}
	const sse, js = "text/event-stream", "application/json"
	cases := []struct {
		name, contentType, head, chunk string
		stream                         bool
		maxTokens                      int64
		input                          int64 // accounted before the cut
		why                            string
	}{
		{"text", sse, start, delta("text_delta", "text"), true, 32000, 100, "the answer passed"},
		{"thinking", sse, start, delta("thinking_delta", "thinking"), true, 32000, 100, "the answer passed"},
		{"data lines with no blank line", sse, start, `data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"` + piece + `"}}` + "\n", true, 32000, 100, "one event of the answer passed"},
		{"one endless line", sse, "data: ", piece, true, 32000, 0, "one event of the answer passed"},
		// Kept whole to read its usage, so held to a small cap here.
		{"endless JSON answer", js, `{"type":"message","content":[{"type":"text","text":"`, piece, false, 64, 0, "the answer passed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, endlessAnthropic(tc.contentType, tc.head, tc.chunk))
			p := startProxy(t, up, Options{})
			token := open(t, p, "job-1")
			body := fmt.Sprintf(`{"model":"deepseek-flash","max_tokens":%d,"stream":%v,"messages":[{"role":"user","content":"go on"}]}`, tc.maxTokens, tc.stream)
			limit := responseCap(tc.maxTokens)

			// One event of at most maxRelayEvent (twice that while it grows),
			// the read buffers, and garbage the collector has not taken yet.
			const bound = 5 * maxRelayEvent
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// A regression: stop before it takes the machine.
			hw := heapwatch.Start(bound, cancel)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/v1/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			var n int64
			tail := &tailWriter{max: 64 << 10}
			if err == nil {
				n, err = io.Copy(tail, resp.Body) // the harness reads to the end
				resp.Body.Close()
			}
			cancel()
			base, peak := hw.Stop()
			t.Logf("heap in use %d KiB before, peak %d KiB (+%d KiB); %d bytes passed, cap %d", base>>10, peak>>10, (peak-min(peak, base))>>10, n, limit)
			if peak > base+bound {
				t.Fatalf("heap in use grew from %d KiB to %d KiB, more than %d KiB", base>>10, peak>>10, bound>>10)
			}
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			if n > limit+4<<10 {
				t.Errorf("%d bytes passed on, more than the cap %d and an error event", n, limit)
			}

			var msg string
			if tc.stream {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				before, ev, ok := bytes.Cut(tail.b, []byte("event: error\ndata: "))
				if !ok || !bytes.HasSuffix(ev, []byte("\n\n")) {
					t.Fatalf("the answer does not end with an error event: ...%q", tail.b[max(0, len(tail.b)-300):])
				}
				if len(before) > 0 && !bytes.HasSuffix(before, []byte("\n\n")) {
					t.Errorf("the error event does not start an event of its own: ...%q", before[max(0, len(before)-100):])
				}
				var e struct {
					Type  string `json:"type"`
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(bytes.TrimSpace(ev), &e); err != nil || e.Type != "error" || e.Error.Type != errAPI {
					t.Fatalf("error event %q: %v", ev, err)
				}
				msg = e.Error.Message
			} else {
				if resp.StatusCode != http.StatusBadGateway {
					t.Fatalf("status %d, want 502", resp.StatusCode)
				}
				_, msg = anthropicError(t, string(tail.b))
			}
			for _, want := range []string{"the upstream sent more than the output cap allows", tc.why} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if !strings.Contains(msg, fmt.Sprint(limit)) && !strings.Contains(msg, fmt.Sprint(maxRelayEvent)) {
				t.Errorf("message %q does not say the cap", msg)
			}
			if got := len(up.requests()); got != 1 {
				t.Errorf("%d upstream requests, want 1", got)
			}
			if u, _ := p.Usage("job-1"); u.InputTokens != tc.input || u.Requests != 1 {
				t.Errorf("usage %+v, want input %d from what passed before the cut, 1 request", u, tc.input)
			}
			if st := p.Stats(); st.UpstreamErrors != 1 {
				t.Errorf("stats %+v, want the cut counted as an upstream error", st)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	b   []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

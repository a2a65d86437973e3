package deepseek_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/heapwatch"
)

// endlessMax bounds what one request of endlessServer sends, so a client that
// never stops reading still ends the test.
const endlessMax = 1 << 30

// endlessServer is a loopback chat completions endpoint whose answer never
// ends: chunk, repeated until the client hangs up or endlessMax bytes went
// out. It counts its requests.
func endlessServer(t *testing.T, chunk string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		buf := []byte(strings.Repeat(chunk, max(1, 64<<10/len(chunk))))
		for sent := 0; sent < endlessMax; sent += len(buf) {
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestFlashEndlessStreamHitsTheOutputCap: an upstream that streams content,
// reasoning, tool-call arguments, data lines with no blank line, or one
// endless line makes Flash end with ErrOverOutputCap after one attempt, with
// the heap in use staying near the cap instead of following the stream. Not
// parallel: HeapInuse is process-wide.
func TestFlashEndlessStreamHitsTheOutputCap(t *testing.T) {
	piece := strings.Repeat("x", 1000)
	delta := func(d string) string { return `data: {"choices":[{"delta":` + d + `}]}` + "\n\n" }
	cases := []struct {
		name, chunk, what string
	}{
		{"content", delta(fmt.Sprintf(`{"content":%q}`, piece)), "the reasoning, answer and tool-call arguments passed"},
		{"reasoning", delta(fmt.Sprintf(`{"reasoning_content":%q}`, piece)), "the reasoning, answer and tool-call arguments passed"},
		{"tool arguments", delta(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, piece)), "the reasoning, answer and tool-call arguments passed"},
		{"data lines with no blank line", `data: {"choices":[{"delta":{"content":"` + piece + `"}}]}` + "\n", "one event of the answer stream"},
		{"one endless line", piece, "one line of the answer stream"},
	}
	const tokens = 4096
	limit := deepseek.OutputCap(tokens)
	if limit != tokens*64+1<<20 {
		t.Fatalf("OutputCap(%d) = %d, want %d × 64 + 1 MiB", tokens, limit, tokens)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := endlessServer(t, tc.chunk)
			c := deepseek.NewClient(deepseek.Options{
				BaseURL: srv.URL, APIKey: "sk-test-endless", MaxOutputTokens: tokens,
				Timeout: 30 * time.Second, RetryBackoff: time.Millisecond,
			})
			// The answer, one line and one event, each at most a little over
			// the cap, plus decoding garbage the collector has not taken yet.
			bound := uint64(8 * limit)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// A regression: stop the call before it takes the machine.
			hw := heapwatch.Start(bound, cancel)
			res, err := c.Flash(ctx, deepseek.FlashRequest{Task: "never stop"})
			cancel()
			base, peak := hw.Stop()
			t.Logf("heap in use %d KiB before, peak %d KiB (+%d KiB); cap %d KiB", base>>10, peak>>10, (peak-min(peak, base))>>10, limit>>10)
			if peak > base+bound {
				t.Fatalf("heap in use grew from %d KiB to %d KiB, more than %d KiB (8 × the cap)", base>>10, peak>>10, bound>>10)
			}

			if !errors.Is(err, deepseek.ErrOverOutputCap) || !errors.Is(err, deepseek.ErrUpstream) {
				t.Fatalf("err = %v, want ErrOverOutputCap (an ErrUpstream)", err)
			}
			for _, want := range []string{"the upstream sent more than the output cap allows", tc.what, "DEEPSEEK_MAX_OUTPUT_TOKENS=4096", "not retried"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if n := requests.Load(); n != 1 || res.Attempts != 1 {
				t.Errorf("%d requests, %d attempts; want 1: a stream past the cap is not retried", n, res.Attempts)
			}
			if res.Answer != "" {
				t.Errorf("Answer = %d bytes, want none from a cut-off stream", len(res.Answer))
			}
		})
	}
}

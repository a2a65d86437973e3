package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/bench"
)

// Bounds of TestFlashEndlessStreamMemory.
const (
	// endlessServeMax is the most one request of the endless upstream sends,
	// so a bridge that never stops reading still ends the test.
	endlessServeMax = 2 << 30
	// endlessRSSGrowth is how much bridge serve's RSS may grow during the
	// call. The cap at the default 4096 output tokens is about 1.3 MiB of
	// answer (deepseek.OutputCap); the rest is the runtime's headroom. Before
	// the cap the same call grew by gigabytes.
	endlessRSSGrowth = 64 << 20
)

// TestFlashEndlessStreamMemory: an upstream that never ends its answer —
// endless content, endless reasoning, or data lines with no blank line to end
// the event — makes a real bridge serve cut the call off with a clear error
// once the answer passes what DEEPSEEK_MAX_OUTPUT_TOKENS allows, and its RSS
// stays within endlessRSSGrowth of where it started.
func TestFlashEndlessStreamMemory(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	up := httptest.NewServer(endlessUpstream(&requests))
	t.Cleanup(up.Close)

	for _, mode := range []string{"content", "reasoning", "no-blank-line"} {
		t.Run(mode, func(t *testing.T) {
			before := requests.Load()
			b := startBridge(t, map[string]string{
				"DEEPSEEK_BASE_URL": up.URL + "/" + mode,
				"DEEPSEEK_API_KEY":  "sk-test-endless-upstream",
				// A regression ends at this deadline instead of the default 90 s.
				"DEEPSEEK_TIMEOUT_MS": "20000",
			})
			cs := goSDKClient(t, b.URL())
			base, err := bench.RSS(b.PID())
			if err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			peak, over := base, make(chan int64, 1)
			sampled := make(chan struct{})
			go func() { // owner: this subtest; joined through sampled
				defer close(sampled)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					rss, err := bench.RSS(b.PID())
					if err != nil {
						continue
					}
					peak = max(peak, rss)
					if rss-base > endlessRSSGrowth {
						over <- rss // stop the call now: the machine is shared
						cancel()
						return
					}
				}
			}()
			start := time.Now()
			res, callErr := cs.CallTool(ctx, toolCall("deepseek_flash", map[string]any{"task": "never stop"}))
			took := time.Since(start)
			cancel()
			<-sampled
			select {
			case rss := <-over:
				t.Fatalf("bridge serve grew from %d MiB to %d MiB during the call (bound +%d MiB)", base>>20, rss>>20, endlessRSSGrowth>>20)
			default:
			}
			// The samples can miss a short call's peak; the kernel's
			// high-water mark cannot.
			hwm, err := statusKB(b.PID(), "VmHWM")
			if err != nil {
				t.Fatal(err)
			}
			peak = max(peak, hwm)
			t.Logf("%s: RSS %d KiB before, peak %d KiB (+%d KiB), call took %s",
				mode, base>>10, peak>>10, (peak-base)>>10, took.Round(time.Millisecond))
			if peak-base > endlessRSSGrowth {
				t.Errorf("bridge serve's RSS peaked at %d MiB, %d MiB over where it started (bound +%d MiB)", peak>>20, (peak-base)>>20, endlessRSSGrowth>>20)
			}
			if callErr != nil {
				t.Fatalf("tools/call: %v", callErr)
			}
			text := textOf(res)
			if !res.IsError || !strings.Contains(text, "the upstream sent more than the output cap allows") ||
				!strings.Contains(text, "DEEPSEEK_MAX_OUTPUT_TOKENS") {
				t.Fatalf("IsError %v, text %q; want the output cap error naming DEEPSEEK_MAX_OUTPUT_TOKENS", res.IsError, text)
			}
			if n := requests.Load() - before; n != 1 {
				t.Errorf("%d upstream requests, want 1: an answer past the cap is not retried", n)
			}
		})
	}
}

// endlessUpstream is an OpenAI-format chat completions endpoint whose answer
// never finishes. The first path segment picks what it streams: "content" or
// "reasoning" deltas of 1000 bytes each, or ("no-blank-line") content data
// lines with no blank line between them, so the event never ends. It stops
// when the client hangs up or after endlessServeMax bytes.
func endlessUpstream(requests *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		var chunk string
		piece := strings.Repeat("x", 1000)
		switch mode {
		case "content":
			chunk = fmt.Sprintf(`data: {"choices":[{"delta":{"content":%q}}]}`+"\n\n", piece)
		case "reasoning":
			chunk = fmt.Sprintf(`data: {"choices":[{"delta":{"reasoning_content":%q}}]}`+"\n\n", piece)
		case "no-blank-line":
			chunk = fmt.Sprintf(`data: {"choices":[{"delta":{"content":%q}}]}`+"\n", piece)
		default:
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		buf := []byte(strings.Repeat(chunk, 64))
		for sent := 0; sent < endlessServeMax; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	})
}

// statusKB reads a "NAME:  N kB" field of /proc/PID/status, in bytes.
func statusKB(pid int, name string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, name)
}

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

type progressParams struct {
	Token    any     `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

func progressOf(t testing.TB, msgs []rpcMessage) []progressParams {
	t.Helper()
	var out []progressParams
	for _, m := range msgs {
		if m.Method != "notifications/progress" {
			continue
		}
		var p progressParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// burstFlash reports n progress events as fast as it can and returns right
// after the last one — the case mcp-go v1.2.1 loses the last notification in.
func burstFlash(n int) *fakeFlash {
	return &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		for i := 1; i <= n; i++ {
			req.Progress(deepseek.ProgressEvent{Phase: deepseek.PhaseAnswering, Tokens: i, Message: "chunk"})
		}
		return deepseek.FlashResult{Answer: "done", Model: "deepseek-flash", FinishReason: "stop"}, nil
	}}
}

// TestEveryProgressNotificationArrives counts, on the client side, every
// notification of many calls whose handler returns right after its last one.
func TestEveryProgressNotificationArrives(t *testing.T) {
	const perCall, calls = 5, 300
	env := newTestEnv(t, Options{Flash: burstFlash(perCall)})
	env.srv.limiter = newCallLimiter(1_000_000, time.Now)
	for i := range calls {
		r := post(t, env.url, callBody(i, "deepseek_flash", map[string]any{"task": "x"}, "tok-"+itoa(i)), mcpHeaders)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || r.header.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("call %d: %d %v", i, r.status, r.header)
		}
		msgs := messages(t, r)
		ps := progressOf(t, msgs)
		if len(ps) != perCall+1 {
			t.Fatalf("call %d: %d progress notifications arrived, want %d", i, len(ps), perCall+1)
		}
		if f := ps[perCall]; f.Progress != perCall+1 || f.Total != perCall+1 || f.Message != "answer received" {
			t.Fatalf("call %d: final notification %+v, want progress == total", i, f)
		}
		for j, p := range ps[:perCall] {
			if p.Token != "tok-"+itoa(i) || p.Progress != float64(j+1) {
				t.Fatalf("call %d notification %d = %+v", i, j, p)
			}
		}
		if res := finalResult(t, msgs); res.IsError || !strings.HasPrefix(res.text(), "done") {
			t.Fatalf("call %d result %+v", i, res)
		}
		if string(msgs[len(msgs)-1].ID) != itoa(i) {
			t.Fatalf("the response is not last: %+v", msgs)
		}
	}
}

// BenchmarkUnpatchedMCPGoDropsNotifications measures the upstream bug this
// file works around: a burst of progress notifications right before the
// handler returns, through a bare mcp-go handler. The drop is a race, so it is
// a figure (lost/notification in the benchmark output), not an assertion:
// go test -run ^$ -bench UnpatchedMCPGo ./server/
func BenchmarkUnpatchedMCPGoDropsNotifications(b *testing.B) {
	const perCall = 5
	bare := mcpserver.NewMCPServer("bare", "1")
	bare.AddTool(mcp.NewTool("burst"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		for i := 1; i <= perCall; i++ {
			srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": "t", "progress": i})
		}
		return mcp.NewToolResultText("done"), nil
	})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(bare, mcpserver.WithStateLess(true)))
	defer hs.Close()
	lost, calls := 0, 0
	for b.Loop() {
		msgs := messages(b, post(b, hs.URL, callBody(calls, "burst", nil, "t"), mcpHeaders))
		lost += perCall - len(progressOf(b, msgs))
		calls++
	}
	b.ReportMetric(float64(lost)/float64(perCall*calls), "lost/notification")
}

// streamCall starts a tools/call and returns a reader of its SSE lines.
func streamCall(t *testing.T, url, body string) (*bufio.Scanner, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return bufio.NewScanner(resp.Body), resp
}

func TestKeepalive(t *testing.T) {
	tests := []struct {
		name  string
		token any
		want  func(line string) bool
	}{
		{"SSE comments without a progress token", nil, func(l string) bool { return l == ": keepalive" }},
		{"progress notifications with a token", "keep-1", func(l string) bool {
			return strings.HasPrefix(l, "data: ") && strings.Contains(l, `"notifications/progress"`) && strings.Contains(l, `"still working"`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			started := make(chan struct{})
			flash := &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
				close(started)
				select { // blocks until the test has seen the keepalives
				case <-release:
				case <-ctx.Done():
					return deepseek.FlashResult{}, ctx.Err()
				}
				return deepseek.FlashResult{Answer: "late answer", Model: "deepseek-flash", FinishReason: "stop"}, nil
			}}
			env := newTestEnv(t, Options{Flash: flash, KeepaliveInterval: 20 * time.Millisecond})
			sc, resp := streamCall(t, env.url, callBody(1, "deepseek_flash", map[string]any{"task": "slow"}, tt.token))
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("%d %v", resp.StatusCode, resp.Header)
			}
			waitFor(t, started, 5*time.Second, "the handler")
			seen, lastProgress := 0, -1.0
			for seen < 3 && sc.Scan() {
				line := sc.Text()
				if tt.want(line) {
					seen++
					if tt.token != nil {
						var m rpcMessage
						json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m)
						var p progressParams
						json.Unmarshal(m.Params, &p)
						if p.Progress <= lastProgress || p.Token != tt.token {
							t.Fatalf("keepalive progress not increasing or wrong token: %+v after %v", p, lastProgress)
						}
						lastProgress = p.Progress
					}
				}
			}
			if seen < 3 {
				t.Fatalf("saw %d keepalives before the stream ended", seen)
			}
			close(release)
			var rest []string
			for sc.Scan() {
				rest = append(rest, sc.Text())
			}
			if !strings.Contains(strings.Join(rest, "\n"), "late answer") {
				t.Fatalf("no final answer after keepalives: %q", rest)
			}
		})
	}
}

func TestProgressReporterOutsideMiddleware(t *testing.T) {
	// Without a token Report is a no-op; without a server in ctx too.
	var p *progressReporter
	p.Report(1, 0, "nil receiver")
	newProgressReporter(t.Context(), mcp.CallToolRequest{}).Report(1, 2, "no token")
	req := mcp.CallToolRequest{}
	req.Params.Meta = &mcp.Meta{ProgressToken: "x"}
	newProgressReporter(t.Context(), req).Report(1, 2, "no server in ctx")
	cs := &callStream{}
	for i, tc := range []struct{ in, want float64 }{{0, 0}, {0, 1}, {5, 5}, {3, 6}, {6.5, 6.5}} {
		if got := cs.nextProgress(tc.in); got != tc.want {
			t.Errorf("step %d: nextProgress(%v) = %v, want %v", i, tc.in, got, tc.want)
		}
	}
}

// TestPanickingToolLeavesNoGoroutine: a tool that panics (mcp-go's recovery
// turns it into an error) still has its keepalive and pump joined before the
// answer goes out.
func TestPanickingToolLeavesNoGoroutine(t *testing.T) {
	env := newTestEnv(t, Options{KeepaliveInterval: time.Hour})
	env.srv.mcp.AddTool(mcp.NewTool("boom"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("boom")
	})
	for i := range 3 {
		r := post(t, env.url, callBody(i, "boom", nil, "tok"), mcpHeaders)
		msgs := messages(t, r)
		if r.status != 200 || len(msgs) == 0 || msgs[len(msgs)-1].Error == nil || !strings.Contains(msgs[len(msgs)-1].Error.Message, "panic recovered") {
			t.Fatalf("call %d: %d %q", i, r.status, r.body)
		}
	}
	if left := callGoroutines(); left != "" {
		t.Fatalf("goroutines of finished calls still running:\n%s", left)
	}
}

// callGoroutines returns the stacks of running call loops (pump and keepalive).
func callGoroutines() string {
	return strings.Join(callLoops(), "\n\n")
}

func callLoops() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*Server).startCallLoop.func") {
			out = append(out, g)
		}
	}
	return out
}

// TestOneGoroutinePerHeldCall: a held tools/call costs the bridge one
// goroutine of its own (pump and keepalive together), whether or not the
// client asked for progress, and none once the calls are answered.
func TestOneGoroutinePerHeldCall(t *testing.T) {
	env := newTestEnv(t, Options{KeepaliveInterval: time.Hour})
	const held = 6
	entered := make(chan struct{}, held)
	release := make(chan struct{})
	env.srv.mcp.AddTool(mcp.NewTool("hold"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-release
		return mcp.NewToolResultText("released"), nil
	})
	type answer struct {
		status int
		body   string
		err    error
	}
	results := make(chan answer, held)
	for i := range held {
		token := any(nil)
		if i%2 == 0 {
			token = fmt.Sprintf("tok-%d", i)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, env.url, strings.NewReader(callBody(i, "hold", nil, token)))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range mcpHeaders {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			results <- answer{resp.StatusCode, string(b), err}
		}()
	}
	for range held {
		<-entered
	}
	if n := len(callLoops()); n != held {
		t.Errorf("%d calls held, %d call loops running; want one each", held, n)
	}
	close(release)
	for range held {
		r := <-results
		if r.err != nil || r.status != 200 || !strings.Contains(r.body, "released") {
			t.Errorf("held call answered %d %q (%v)", r.status, r.body, r.err)
		}
	}
	if left := callGoroutines(); left != "" {
		t.Fatalf("goroutines of finished calls still running:\n%s", left)
	}
}

// TestProgressNeverGoesBackwards: reports from several goroutines of one call
// (the handler and the keepalive do this) reach the wire strictly increasing.
func TestProgressNeverGoesBackwards(t *testing.T) {
	const reporters, each = 8, 10 // 80 fits mcp-go's 100-slot channel: none dropped
	env := newTestEnv(t, Options{KeepaliveInterval: time.Hour})
	env.srv.mcp.AddTool(mcp.NewTool("racy"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := newProgressReporter(ctx, req)
		var wg sync.WaitGroup
		for range reporters {
			wg.Go(func() {
				for range each {
					p.Report(0, 0, "tick")
				}
			})
		}
		wg.Wait()
		return mcp.NewToolResultText("done"), nil
	})
	for i := range 50 {
		r := post(t, env.url, callBody(i, "racy", nil, "tok"), mcpHeaders)
		ps := progressOf(t, messages(t, r))
		if len(ps) != reporters*each {
			t.Fatalf("call %d: %d progress notifications, want %d", i, len(ps), reporters*each)
		}
		for j := 1; j < len(ps); j++ {
			if ps[j].Progress <= ps[j-1].Progress {
				t.Fatalf("call %d: progress went from %v to %v on the wire", i, ps[j-1].Progress, ps[j].Progress)
			}
		}
	}
}

// timedWriter records when each write reached the response, and what it was.
type timedWriter struct {
	*httptest.ResponseRecorder
	mu     sync.Mutex
	at     []time.Time
	writes []string
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.at = append(w.at, time.Now())
	w.writes = append(w.writes, string(p))
	w.mu.Unlock()
	return w.ResponseRecorder.Write(p)
}

// TestKeepaliveGapStaysUnderTheInterval (fake clock): whatever the handler
// writes and when, the wire is never silent for more than three quarters of
// KeepaliveInterval — the keepalive is timed from the last write, not from a
// ticker that may look just before the silence is long enough and then not
// again for a quarter interval (which let a gap reach the whole interval).
func TestKeepaliveGapStaysUnderTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 15 * time.Second
		s := &Server{o: Options{KeepaliveInterval: every}, log: zerolog.Nop()}
		w := &timedWriter{ResponseRecorder: httptest.NewRecorder()}
		start := time.Now()
		sse := newSSEWriter(w)
		stop := s.startCallLoop(t.Context(), &callStream{sse: sse, lastSent: start}, nil)
		// The handler's own events at awkward moments: just after where a
		// check every quarter interval would look, and two close together.
		for _, at := range []time.Duration{3760 * time.Millisecond, 20 * time.Second, 20*time.Second + 10*time.Millisecond, 47 * time.Second} {
			time.Sleep(time.Until(start.Add(at)))
			if err := sse.event([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)); err != nil {
				t.Fatal(err)
			}
		}
		end := start.Add(2 * time.Minute)
		time.Sleep(time.Until(end))
		stop()

		w.mu.Lock()
		defer w.mu.Unlock()
		quiet := every - every/4
		prev, longest, comments := start, time.Duration(0), 0
		for i, at := range append(w.at, end) {
			if gap := at.Sub(prev); gap > longest {
				longest = gap
			}
			prev = at
			if i < len(w.writes) && w.writes[i] == ": keepalive\n\n" {
				comments++
			}
		}
		if longest > quiet {
			t.Errorf("the longest silence on the wire was %s, want at most %s (three quarters of the %s interval)", longest, quiet, every)
		}
		if comments < 7 {
			t.Errorf("%d keepalive comments in 2 minutes with 4 events, want at least 7", comments)
		}
	})
}

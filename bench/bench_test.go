package bench

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

func TestQuantile(t *testing.T) {
	ms := func(v ...int) Latencies {
		var l Latencies
		for _, x := range v {
			l = append(l, time.Duration(x)*time.Millisecond)
		}
		return l
	}
	hundred := make(Latencies, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name string
		l    Latencies
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four is the second (nearest rank)", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 1..100", hundred, 0.99, 99 * time.Millisecond},
		{"p50 of 1..100", hundred, 0.50, 50 * time.Millisecond},
		{"max", hundred, 1, 100 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.l.Quantile(c.q); got != c.want {
				t.Fatalf("Quantile(%v) = %v, want %v", c.q, got, c.want)
			}
		})
	}
}

func TestReadSSEAnswer(t *testing.T) {
	cases := []struct {
		name, stream, wantResult, wantErr string
	}{
		{
			name: "progress and keepalive before the answer",
			stream: ": keepalive\n\n" +
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n" +
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n",
			wantResult: `{"ok":true}`,
		},
		{
			name:       "data split over two lines",
			stream:     "data: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":1}\n\n",
			wantResult: `1`,
		},
		{
			name:       "last event without its blank line",
			stream:     "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":2}\n",
			wantResult: `2`,
		},
		{
			name:    "answer to another id",
			stream:  "data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":2}\n\n",
			wantErr: "ended without the answer",
		},
		{
			name:    "not JSON",
			stream:  "data: {nope\n\n",
			wantErr: "not JSON-RPC",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := readSSEAnswer(strings.NewReader(c.stream), "7")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Result) != c.wantResult {
				t.Fatalf("result %s, want %s", m.Result, c.wantResult)
			}
		})
	}
}

// bridgeUnderTest serves the real server package's handler over the
// deepseek client and a double, in process.
func bridgeUnderTest(t *testing.T) (mcpURL string, d *deepseektest.Server) {
	t.Helper()
	return bridgeUnderTestB(t)
}

func bridgeUnderTestB(t testing.TB) (mcpURL string, d *deepseektest.Server) {
	t.Helper()
	d = deepseektest.New()
	t.Cleanup(d.Close)
	flash := deepseek.NewClient(deepseek.Options{BaseURL: d.URL(), APIKey: d.Key()})
	srv, err := server.New(server.Options{
		Config: config.Config{PathSecret: benchSecret, RateLimitPerMinute: 1_000_000},
		Flash:  flash, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp/" + benchSecret, d
}

// minimalProxyUnderTest serves a MinimalProxy of d in process and returns its URL.
func minimalProxyUnderTest(t testing.TB, d *deepseektest.Server) string {
	t.Helper()
	mp, err := NewMinimalProxy(d.URL(), d.Key(), deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, &http.Client{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mp)
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestClientAndFloorAgainstTheBridge(t *testing.T) {
	mcpURL, d := bridgeUnderTest(t)
	hc := &http.Client{Transport: newTransport(2)}
	c := NewClient(mcpURL, hc)
	if err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c.proto != ProtocolVersion {
		t.Fatalf("negotiated %q, want %q", c.proto, ProtocolVersion)
	}

	res, err := c.CallTool(t.Context(), "deepseek_flash", map[string]any{"task": flashTask})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(res.Text, deepseektest.DefaultText) || !bytes.Contains(res.Structured, []byte(`"finish_reason":"stop"`)) {
		t.Fatalf("flash result %+v", res)
	}
	if err := flashCall(t.Context(), c); err != nil {
		t.Fatalf("flashCall: %v", err)
	}

	res, err = c.CallTool(t.Context(), "deepseek_flash", map[string]any{"task": "  "})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Text, "the task is empty") {
		t.Fatalf("empty task: %+v, want an error result", res)
	}
	if _, err := c.CallTool(t.Context(), "no_such_tool", map[string]any{}); err == nil {
		t.Fatal("unknown tool: no error")
	}

	// The floor sends the double byte for byte what the bridge sent.
	reqs := d.Requests()
	if len(reqs) != 2 {
		t.Fatalf("double saw %d requests, want 2", len(reqs))
	}
	f, err := NewFloorClient(d.URL(), d.Key(), deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, flashTask, hc)
	if err != nil {
		t.Fatal(err)
	}
	text, err := f.Do(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if text != deepseektest.DefaultText {
		t.Fatalf("floor answer %q, want %q", text, deepseektest.DefaultText)
	}
	reqs = d.Requests()
	if got, want := reqs[2].Body, reqs[0].Body; !bytes.Equal(got, want) {
		t.Fatalf("floor body differs from the bridge's:\nfloor  %s\nbridge %s", got, want)
	}
}

// TestMinimalProxy: the bench's second floor answers the load driver as the
// bridge does (initialize, then tools/call over SSE) and sends the double
// the bridge's request byte for byte.
func TestMinimalProxy(t *testing.T) {
	mcpURL, d := bridgeUnderTest(t)
	minURL := minimalProxyUnderTest(t, d)
	hc := &http.Client{Transport: newTransport(2)}
	for _, url := range []string{mcpURL, minURL} {
		c := NewClient(url, hc)
		if err := c.Initialize(t.Context()); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		res, err := c.CallTool(t.Context(), "deepseek_flash", map[string]any{"task": flashTask})
		if err != nil || res.IsError || !strings.Contains(res.Text, deepseektest.DefaultText) {
			t.Fatalf("%s: result %+v, %v", url, res, err)
		}
	}
	reqs := d.Requests()
	if len(reqs) != 2 || !bytes.Equal(reqs[1].Body, reqs[0].Body) {
		t.Fatalf("the minimal proxy's upstream request differs from the bridge's (%d requests)", len(reqs))
	}
	// An upstream error is an error result, not a dropped connection.
	d.Script(deepseektest.Error(402))
	c := NewClient(minURL, hc)
	res, err := c.CallTool(t.Context(), "deepseek_flash", map[string]any{"task": flashTask})
	if err != nil || !res.IsError || !strings.Contains(res.Text, "402") {
		t.Fatalf("upstream 402: result %+v, %v; want an error result naming 402", res, err)
	}
}

func TestClientErrors(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "HTTP 404"},
		{"JSON-RPC error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"rate limit exceeded"}}`))
		}, "rate limit exceeded"},
		{"wrong content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("hello"))
		}, "unexpected Content-Type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := httptest.NewServer(c.handler)
			defer hs.Close()
			_, err := NewClient(hs.URL, hs.Client()).CallTool(t.Context(), "x", nil)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestClosedLoop(t *testing.T) {
	t.Run("stops at maxRequests and counts every answer", func(t *testing.T) {
		var calls atomic.Int64
		res := ClosedLoop(t.Context(), 4, 0, time.Minute, 100, func(context.Context, int) error {
			calls.Add(1)
			return nil
		})
		if len(res.Lat) < 100 || len(res.Lat) > 100+4 {
			t.Fatalf("%d latencies, want 100 to 104", len(res.Lat))
		}
		if int64(res.Done) != calls.Load() || res.Errors != 0 {
			t.Fatalf("done %d, calls %d, errors %d", res.Done, calls.Load(), res.Errors)
		}
		for i := 1; i < len(res.Lat); i++ {
			if res.Lat[i] < res.Lat[i-1] {
				t.Fatal("latencies not sorted")
			}
		}
	})
	t.Run("errors are counted, not timed", func(t *testing.T) {
		boom := errors.New("boom")
		var n atomic.Int64
		res := ClosedLoop(t.Context(), 1, 0, time.Minute, 10, func(context.Context, int) error {
			if n.Add(1)%2 == 0 {
				return boom
			}
			return nil
		})
		if len(res.Lat) != 10 || res.Errors < 9 || !errors.Is(res.FirstErr, boom) {
			t.Fatalf("lat %d errors %d first %v", len(res.Lat), res.Errors, res.FirstErr)
		}
	})
	t.Run("ends with its time bound", func(t *testing.T) {
		release := make(chan struct{})
		close(release)
		res := ClosedLoop(t.Context(), 2, 0, 50*time.Millisecond, 1<<30, func(ctx context.Context, _ int) error {
			<-release
			return nil
		})
		if res.Elapsed > 5*time.Second || len(res.Lat) == 0 {
			t.Fatalf("elapsed %v with %d answers", res.Elapsed, len(res.Lat))
		}
	})
	t.Run("a cancelled context ends it without errors", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		res := ClosedLoop(ctx, 3, 0, time.Minute, 1<<30, func(ctx context.Context, _ int) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		})
		if res.Errors != 0 || len(res.Lat) != 0 {
			t.Fatalf("errors %d, answers %d", res.Errors, len(res.Lat))
		}
	})
	t.Run("merge keeps the union sorted", func(t *testing.T) {
		a := LoadResult{Lat: Latencies{1, 5}, Done: 3, Elapsed: time.Second}
		a.merge(LoadResult{Lat: Latencies{2, 9}, Done: 2, Errors: 1, Elapsed: time.Second})
		if want := (Latencies{1, 2, 5, 9}); !equalLat(a.Lat, want) || a.Done != 5 || a.Errors != 1 || a.Throughput() != 2 {
			t.Fatalf("merged %+v", a)
		}
	})
}

func equalLat(a, b Latencies) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestProcFigures(t *testing.T) {
	rss, err := RSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("RSS of the test process: %d, %v", rss, err)
	}
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the counter (10 ms ticks) has moved by 20 ms; on a busy
	// machine that takes longer than 20 ms of wall time, so bound it at 10 s.
	var after time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if after, err = CPUTime(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if after-before >= 20*time.Millisecond {
			break
		}
	}
	if d := after - before; d < 20*time.Millisecond {
		t.Fatalf("CPU time moved by %v over up to 10 s of busy loop", d)
	}
	if _, err := RSS(1 << 30); err == nil {
		t.Fatal("RSS of a pid that cannot exist: no error")
	}
}

func TestRowsVerdicts(t *testing.T) {
	lat := func(d time.Duration, n int) Latencies {
		l := make(Latencies, n)
		for i := range l {
			l[i] = d
		}
		return l
	}
	good := &Report{
		Flash: []FlashCell{{Clients: 64,
			Bridge:   LoadResult{Lat: lat(2*time.Millisecond, 100), Done: 100, Elapsed: 10 * time.Millisecond},
			Floor:    LoadResult{Lat: lat(1500*time.Microsecond, 100), Done: 100},
			MinProxy: LoadResult{Lat: lat(1500*time.Microsecond, 100), Done: 100, Elapsed: 10 * time.Millisecond},
			// 1 ms of CPU per call against 0.8 ms: ratio 1.25.
			BridgeCPU: SideCPU{Bridge: 100 * time.Millisecond}, MinProxyCPU: SideCPU{MinProxy: 80 * time.Millisecond}}},
		RSSIdle: 12 << 20, GoroutinesBase: Goroutines{Total: 16, Pool: 2}, GoroutinesAfter: Goroutines{Total: 138, Pool: 124},
		Poll:  lat(200*time.Microsecond, 10),
		Spawn: lat(5*time.Millisecond, 10), SpawnFloor: lat(2*time.Millisecond, 10),
		Held: Held{Polls: 1000, Held: 1000, Cancelled: 1000, GoroutinesBefore: Goroutines{Total: 19}, GoroutinesAfter: Goroutines{Total: 14}},
	}
	if miss := good.Misses(); len(miss) != 0 {
		t.Fatalf("misses %v in a report within every target", miss)
	}
	bad := *good
	bad.Flash = []FlashCell{{Clients: 64,
		Bridge:   LoadResult{Lat: lat(5*time.Millisecond, 50), Done: 50, Elapsed: time.Second}, // 50 calls/s, half the minimal proxy's
		Floor:    LoadResult{Lat: lat(time.Millisecond, 100), Done: 100},
		MinProxy: LoadResult{Lat: lat(time.Millisecond, 100), Done: 100, Elapsed: time.Second},
		// 6 ms of CPU per call (50 calls) against 1 ms: ratio 6.
		BridgeCPU: SideCPU{Bridge: 300 * time.Millisecond}, MinProxyCPU: SideCPU{MinProxy: 100 * time.Millisecond}}}
	bad.RSSIdle = 25 << 20
	bad.GoroutinesAfter = Goroutines{Total: 140, Pool: 124}
	bad.Poll = lat(600*time.Microsecond, 10)
	bad.Spawn = lat(20*time.Millisecond, 10)
	bad.Held.Cancelled = 999
	bad.Held.GoroutinesAfter = Goroutines{Total: 20}
	if got := len(bad.Misses()); got != 9 {
		t.Fatalf("%d misses, want 9: %v", got, bad.Misses())
	}
	var text, md bytes.Buffer
	bad.Text(&text)
	bad.Markdown(&md)
	for _, want := range []string{"MISS", "4.00 ms", "25.0 MiB", "600 µs", "missed targets:", "6.00×", "ratio ≤ 1.25×", "0.50×", "ratio ≥ 0.9×"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text table lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "| **MISS** |") || !strings.Contains(md.String(), "|---|") {
		t.Errorf("markdown table:\n%s", md.String())
	}
}

func TestParseGoroutineProfile(t *testing.T) {
	profile := `goroutine profile: total 9
4 @ 0x47a3ce 0x4437a5
#	0x6c2f1d	net/http.(*persistConn).readLoop+0x2bd	/go/src/net/http/transport.go:2395

4 @ 0x47a3ce 0x4437a5
#	0x6c49b1	net/http.(*persistConn).writeLoop+0xf1	/go/src/net/http/transport.go:2597

1 @ 0x47a3ce 0x4437a5
#	0x6a1234	net/http.(*conn).serve+0x5f	/go/src/net/http/server.go:2102
`
	g, err := parseGoroutineProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	if g != (Goroutines{Total: 9, Pool: 8}) || g.Own() != 1 {
		t.Fatalf("got %+v", g)
	}
	if _, err := parseGoroutineProfile("<html>"); err == nil {
		t.Fatal("no error for a page that is not a profile")
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{fmtDur(1500 * time.Microsecond), "1.50 ms"},
		{fmtDur(250 * time.Microsecond), "250 µs"},
		{fmtDur(-2 * time.Millisecond), "−2.00 ms"},
		{fmtDur(3 * time.Second), "3.00 s"},
		{fmtBytes(512 << 10), "512.0 KiB"},
		{fmtBytes(20 << 20), "20.0 MiB"},
		{fmtBytes(-(3 << 10)), "−3.0 KiB"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

package server

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// An origin the owner allowed (BRIDGE_ALLOWED_ORIGINS) is served; any
// other is refused, with a log line naming the setting and the value.
func TestAllowedOrigins(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowedOrigins = []string{"https://chatgpt.com"}
	env := newTestEnv(t, Options{Config: cfg})
	for _, tt := range []struct {
		origin string
		want   int
	}{
		{"https://chatgpt.com", 200},
		{"HTTPS://ChatGPT.com", 200},
		{"https://chatgpt.com.evil.example", 403},
		{"http://chatgpt.com", 403},
		{"https://evil.example", 403},
	} {
		if r := do(t, "POST", env.url, strings.NewReader(initializeBody(1)), map[string]string{"Origin": tt.origin}); r.status != tt.want {
			t.Errorf("Origin %s: %d, want %d", tt.origin, r.status, tt.want)
		}
	}
	if logs := env.logs.String(); !strings.Contains(logs, "BRIDGE_ALLOWED_ORIGINS=https://evil.example") {
		t.Errorf("the refusal's log line does not name the setting and the value:\n%s", logs)
	}
	// Without the setting ChatGPT's origin is refused like any other.
	plain := newTestEnv(t, Options{})
	if r := do(t, "POST", plain.url, strings.NewReader(initializeBody(1)), map[string]string{"Origin": "https://chatgpt.com"}); r.status != 403 {
		t.Errorf("https://chatgpt.com without the setting: %d, want 403", r.status)
	}
}

func TestRouting(t *testing.T) {
	env := newTestEnv(t, Options{Version: "v-test"})
	base := env.http.URL
	notFound := do(t, "GET", base+"/definitely-not-here", nil, nil)
	if notFound.status != 404 {
		t.Fatalf("unknown path: %d", notFound.status)
	}
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		want   int
	}{
		{"health", "GET", "/health", "", nil, 200},
		{"initialize", "POST", "/mcp/" + testSecret, initializeBody(1), nil, 200},
		{"wrong secret", "POST", "/mcp/wrong-secret-0123456789abcdef", initializeBody(1), nil, 404},
		{"secret prefix", "POST", "/mcp/" + testSecret[:len(testSecret)-1], initializeBody(1), nil, 404},
		{"secret plus one", "POST", "/mcp/" + testSecret + "x", initializeBody(1), nil, 404},
		{"secret then more path", "POST", "/mcp/" + testSecret + "/x", initializeBody(1), nil, 404},
		{"secret trailing slash", "POST", "/mcp/" + testSecret + "/", initializeBody(1), nil, 404},
		{"bare /mcp", "POST", "/mcp", initializeBody(1), nil, 404},
		{"bare /mcp/", "POST", "/mcp/", initializeBody(1), nil, 404},
		{"GET wrong secret", "GET", "/mcp/wrong-secret-0123456789abcdef", "", nil, 404},
		{"DELETE wrong secret", "DELETE", "/mcp/wrong-secret-0123456789abcdef", "", nil, 404},
		{"GET right secret", "GET", "/mcp/" + testSecret, "", nil, 405},
		{"DELETE right secret", "DELETE", "/mcp/" + testSecret, "", nil, 405},
		{"other path", "POST", "/anything", initializeBody(1), nil, 404},
		{"tunnel Host", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Host": "random-words-here.trycloudflare.com"}, 200},
		{"foreign Origin", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Origin": "https://evil.example"}, 403},
		{"DNS rebinding: Origin equals Host", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 403},
		{"null Origin", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Origin": "null"}, 403},
		{"localhost Origin", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Origin": "http://localhost:6274"}, 200},
		{"127.0.0.1 Origin", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Origin": "http://127.0.0.1:3000"}, 200},
		{"[::1] Origin", "POST", "/mcp/" + testSecret, initializeBody(1), map[string]string{"Origin": "http://[::1]:3000"}, 200},
		{"foreign Origin on a wrong secret", "POST", "/mcp/nope", initializeBody(1), map[string]string{"Origin": "https://evil.example"}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			r := do(t, tt.method, base+tt.path, body, tt.header)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d; body %q", r.status, tt.want, r.body)
			}
			if bytes.Contains(r.body, []byte(testSecret)) || bytes.Contains(r.body, []byte(testKey)) {
				t.Fatalf("a secret in the body: %q", r.body)
			}
			switch tt.want {
			case 404:
				// Indistinguishable from a path that does not exist.
				if !bytes.Equal(r.body, notFound.body) || r.header.Get("Content-Type") != notFound.header.Get("Content-Type") ||
					r.header.Get("X-Content-Type-Options") != notFound.header.Get("X-Content-Type-Options") || r.header.Get("Allow") != "" {
					t.Fatalf("404 differs from chi's: %q %v vs %q %v", r.body, r.header, notFound.body, notFound.header)
				}
			case 405:
				if r.header.Get("Allow") != "POST" {
					t.Fatalf("Allow = %q", r.header.Get("Allow"))
				}
			case 200:
				if tt.path == "/health" {
					var h map[string]string
					if err := json.Unmarshal(r.body, &h); err != nil || h["status"] != "ok" || h["version"] != "v-test" || len(h) != 2 {
						t.Fatalf("health = %q", r.body)
					}
				} else if !bytes.Contains(r.body, []byte(`"protocolVersion"`)) {
					t.Fatalf("not an initialize answer: %q", r.body)
				}
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	env := newTestEnv(t, Options{})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x","files":"` +
		strings.Repeat("a", 3<<20) + `"}}}`
	justUnder := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{},"pad":"` + strings.Repeat("b", MaxBodyBytes-100) + `"}`
	tests := []struct {
		name    string
		path    string
		body    func() io.Reader
		chunked bool
		want    int
	}{
		{"3 MB with Content-Length", "/mcp/" + testSecret, func() io.Reader { return strings.NewReader(big) }, false, 413},
		{"3 MB chunked", "/mcp/" + testSecret, func() io.Reader { return io.MultiReader(strings.NewReader(big)) }, true, 413},
		{"3 MB to a wrong secret is refused before routing", "/mcp/nope", func() io.Reader { return strings.NewReader(big) }, false, 413},
		{"just under the limit", "/mcp/" + testSecret, func() io.Reader { return strings.NewReader(justUnder) }, false, 200},
		{"just under the limit, chunked", "/mcp/" + testSecret, func() io.Reader { return io.MultiReader(strings.NewReader(justUnder)) }, true, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "POST", env.http.URL+tt.path, tt.body())
			if err != nil {
				t.Fatal(err)
			}
			if tt.chunked {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.chunked && len(resp.TransferEncoding) == 0 && req.ContentLength != -1 {
				t.Fatal("request was not chunked")
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %.200q", resp.StatusCode, tt.want, b)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	env := newTestEnv(t, Options{Now: clock})
	call := func(id int) response {
		return post(t, env.url, callBody(id, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders)
	}
	for i := 1; i <= 60; i++ {
		if r := call(i); r.status != 200 {
			t.Fatalf("call %d: %d %q", i, r.status, r.body)
		}
	}
	r := call(61)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("61st call: %d, want 429", r.status)
	}
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (one token a second)", ra)
	}
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.JSONRPC != "2.0" || string(body.ID) != "61" || body.Error.Code != -32000 ||
		!strings.Contains(body.Error.Message, "rate limit exceeded") || !strings.Contains(body.Error.Message, "retry after 1 s") {
		t.Fatalf("429 body = %s", r.body)
	}
	// Other methods are not counted.
	for i, b := range []string{listBody(70), initializeBody(71), `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if r := post(t, env.url, b, mcpHeaders); r.status == http.StatusTooManyRequests {
			t.Fatalf("non-call %d limited", i)
		}
	}
	// One second later there is one token: a batch of two calls takes none…
	advance(time.Second)
	batch := "[" + callBody(80, "deepseek_flash", map[string]any{"task": "x"}, nil) + "," + listBody(81) + "," +
		callBody(82, "deepseek_flash", map[string]any{"task": "y"}, nil) + "]"
	r = post(t, env.url, batch, mcpHeaders)
	if r.status != http.StatusTooManyRequests || !bytes.Contains(r.body, []byte(`"id":null`)) || r.header.Get("Retry-After") != "1" {
		t.Fatalf("batch of 2 with 1 token: %d %s Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	// …so the single token is still there for one call, and only one.
	if r := call(90); r.status != 200 {
		t.Fatalf("call after refused batch: %d (the batch consumed tokens)", r.status)
	}
	if r := call(91); r.status != http.StatusTooManyRequests {
		t.Fatalf("second call: %d", r.status)
	}
	// A batch bigger than the whole bucket can never pass; it says so.
	advance(time.Hour)
	var calls []string
	for i := range 61 {
		calls = append(calls, callBody(100+i, "deepseek_flash", map[string]any{"task": "x"}, nil))
	}
	r = post(t, env.url, "["+strings.Join(calls, ",")+"]", mcpHeaders)
	if r.status != http.StatusTooManyRequests || !bytes.Contains(r.body, []byte("this batch holds 61 tools/call")) || r.header.Get("Retry-After") != "60" {
		t.Fatalf("oversized batch: %d %s %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	// and it consumed nothing.
	if r := call(200); r.status != 200 {
		t.Fatalf("call after oversized batch: %d", r.status)
	}
}

func TestCountToolCalls(t *testing.T) {
	tests := []struct {
		body string
		n    int
		id   string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, 1, "7"},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`, 1, `"a"`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, 0, ""},
		{` [{"method":"tools/call","id":1},{"method":"tools/list","id":2},{"method":"tools/call","id":3}]`, 2, ""},
		{`[]`, 0, ""},
		{`not json`, 0, ""},
		{``, 0, ""},
	}
	for _, tt := range tests {
		n, id := countToolCalls([]byte(tt.body))
		if n != tt.n || string(id) != tt.id {
			t.Errorf("%q: n=%d id=%s, want %d %s", tt.body, n, id, tt.n, tt.id)
		}
	}
}

// TestSecretNeverLogged drives every kind of request at the router and greps
// the unredacted debug log for the secret and the key.
func TestSecretNeverLogged(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	env := newTestEnv(t, Options{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	env.srv.limiter = newCallLimiter(1, env.srv.o.Now)
	paths := []string{
		"/mcp/" + testSecret, "/mcp/" + testSecret + "x", "/mcp/" + testSecret + "/extra", "/mcp/x" + testSecret,
		"/" + testSecret, "/health?k=" + testSecret,
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			do(t, m, env.http.URL+p, strings.NewReader(callBody(1, "deepseek_flash", map[string]any{"task": "x"}, nil)), mcpHeaders)
		}
	}
	post(t, env.url, strings.Repeat("x", 3<<20), nil) // 413
	post(t, env.url, callBody(2, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders)
	post(t, env.url, callBody(3, "deepseek_flash", map[string]any{"task": "x"}, nil), mcpHeaders) // 429
	post(t, env.url, initializeBody(4), map[string]string{"Origin": "https://evil.example"})      // 403
	logs := env.logs.String()
	if !strings.Contains(logs, `"route":"/mcp/<redacted>"`) || !strings.Contains(logs, "rate limited") || !strings.Contains(logs, "over the limit") {
		t.Fatalf("expected access log lines, got:\n%s", logs)
	}
	for _, s := range []string{testSecret, testKey} {
		if strings.Contains(logs, s) {
			t.Fatalf("log holds %q:\n%s", s, logs)
		}
	}
}

func TestEveryToolsCallIsSSE(t *testing.T) {
	env := newTestEnv(t, Options{})
	tests := []struct {
		name, body string
		sse        bool
	}{
		{"flash", callBody(1, "deepseek_flash", map[string]any{"task": "x"}, nil), true},
		{"unknown tool", callBody(2, "no_such_tool", map[string]any{}, nil), true},
		{"tools/list stays JSON", listBody(3), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, env.url, tt.body, mcpHeaders)
			isSSE := r.header.Get("Content-Type") == "text/event-stream"
			if r.status != 200 || isSSE != tt.sse || (tt.sse && r.header.Get("X-Accel-Buffering") != "no") {
				t.Fatalf("%d %v %q", r.status, r.header, r.body)
			}
			if len(messages(t, r)) == 0 {
				t.Fatal("no message")
			}
		})
	}
}

// TestRateLimitedCallLogsUnverifiedClientHints: a refused call's log line
// carries what the proxy in front says about the caller, under names that
// say it is unverified; the hints never give a caller a bucket of its own.
func TestRateLimitedCallLogsUnverifiedClientHints(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := newTestEnv(t, Options{Now: func() time.Time { return now }})
	env.srv.limiter = newCallLimiter(1, env.srv.o.Now)
	call := func(id int, hints map[string]string) response {
		h := map[string]string{}
		maps.Copy(h, mcpHeaders)
		maps.Copy(h, hints)
		return post(t, env.url, callBody(id, "deepseek_flash", map[string]any{"task": "x"}, nil), h)
	}
	if r := call(1, map[string]string{"CF-Connecting-IP": "203.0.113.7"}); r.status != 200 {
		t.Fatalf("first call: %d %s", r.status, r.body)
	}
	long := strings.Repeat("198.51.100.200, ", 40)
	cases := []struct {
		hints  map[string]string
		wantCF string
		wantXF string
	}{
		// Another "client" by its headers: still the one bucket, so refused.
		{map[string]string{"CF-Connecting-IP": "198.51.100.9", "X-Forwarded-For": "198.51.100.9, 10.0.0.1"}, "198.51.100.9", "198.51.100.9, 10.0.0.1"},
		{nil, "", ""},
		{map[string]string{"X-Forwarded-For": long}, "", long[:maxHintBytes] + "…"},
	}
	for i, c := range cases {
		before := len(rateLimitedLines(t, env.logs.String()))
		if r := call(10+i, c.hints); r.status != http.StatusTooManyRequests {
			t.Fatalf("case %d: %d, want 429 (the hints must not make a new bucket)", i, r.status)
		}
		lines := rateLimitedLines(t, env.logs.String())
		if len(lines) != before+1 {
			t.Fatalf("case %d: %d rate-limited log lines, want %d", i, len(lines), before+1)
		}
		got := lines[len(lines)-1]
		if got["unverified_cf_connecting_ip"] != c.wantCF || got["unverified_x_forwarded_for"] != c.wantXF {
			t.Errorf("case %d: logged CF %q XFF %q, want %q %q", i, got["unverified_cf_connecting_ip"], got["unverified_x_forwarded_for"], c.wantCF, c.wantXF)
		}
		if got["remote"] != "127.0.0.1" {
			t.Errorf("case %d: remote %q, want the peer address 127.0.0.1", i, got["remote"])
		}
	}
}

// rateLimitedLines are the "rate limited" log lines, string fields only.
func rateLimitedLines(t *testing.T, logs string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if msg, _ := m["message"].(string); !strings.HasPrefix(msg, "rate limited") {
			continue
		}
		fields := map[string]string{}
		for k, v := range m {
			if s, ok := v.(string); ok {
				fields[k] = s
			}
		}
		out = append(out, fields)
	}
	return out
}

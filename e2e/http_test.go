package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Raw JSON-RPC bodies for the status-code tests (raw net/http: the SDK clients
// hide status codes).
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"1"}}}`

func toolsCallBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"ping %d"}}}`, id, id)
}

func toolsListBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, id)
}

func batch(bodies ...string) string { return "[" + strings.Join(bodies, ",") + "]" }

type rawResp struct {
	status int
	header http.Header
	body   []byte
}

var rawClient = &http.Client{Timeout: 30 * time.Second}

// rawDo sends one HTTP request with the headers a Streamable HTTP client sends
// (plus hdr; a "Host" entry sets the Host header) and reads the whole answer.
func rawDo(t testing.TB, method, url string, body []byte, hdr map[string]string) rawResp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, redact(url), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, redact(url), err)
	}
	return rawResp{resp.StatusCode, resp.Header, b}
}

// TestHTTPEdges drives a real `bridge serve` with raw HTTP: the capability
// path, methods, body limit, tunnel Host and browser Origin.
func TestHTTPEdges(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	base, secret := b.BaseURL(), b.Secret()
	big := bytes.Repeat([]byte("x"), 3<<20) // 3 MB, over the 2 MB limit
	bigBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"` + string(big) + `"}}}`)

	cases := []struct {
		name   string
		method string
		path   string
		body   []byte
		hdr    map[string]string
		want   int
	}{
		{"initialize on the secret path", "POST", "/mcp/" + secret, []byte(initializeBody), nil, 200},
		{"wrong secret", "POST", "/mcp/wrong-secret-0123456789abcdef", []byte(initializeBody), nil, 404},
		{"secret minus its last character", "POST", "/mcp/" + secret[:len(secret)-1], []byte(initializeBody), nil, 404},
		{"secret plus a character", "POST", "/mcp/" + secret + "0", []byte(initializeBody), nil, 404},
		{"secret with a trailing path", "POST", "/mcp/" + secret + "/x", []byte(initializeBody), nil, 404},
		{"bare /mcp", "POST", "/mcp", []byte(initializeBody), nil, 404},
		{"bare /mcp/", "POST", "/mcp/", []byte(initializeBody), nil, 404},
		{"unknown path", "POST", "/nothing-here", []byte(initializeBody), nil, 404},
		{"GET on a wrong secret is 404, not 405", "GET", "/mcp/wrong-secret-0123456789abcdef", nil, nil, 404},
		{"DELETE on a wrong secret is 404, not 405", "DELETE", "/mcp/wrong-secret-0123456789abcdef", nil, nil, 404},
		{"GET on the secret path", "GET", "/mcp/" + secret, nil, nil, 405},
		{"DELETE on the secret path", "DELETE", "/mcp/" + secret, nil, nil, 405},
		{"3 MB body", "POST", "/mcp/" + secret, bigBody, nil, 413},
		{"tunnel Host accepted", "POST", "/mcp/" + secret, []byte(initializeBody), map[string]string{"Host": "abc.trycloudflare.com"}, 200},
		{"foreign Origin refused", "POST", "/mcp/" + secret, []byte(initializeBody), map[string]string{"Origin": "https://evil.example"}, 403},
		{"foreign Origin refused on a tunnel Host too", "POST", "/mcp/" + secret, []byte(initializeBody), map[string]string{"Host": "abc.trycloudflare.com", "Origin": "https://evil.example"}, 403},
		{"loopback Origin of the bridge itself accepted", "POST", "/mcp/" + secret, []byte(initializeBody), map[string]string{"Origin": base}, 200},
		{"health", "GET", "/health", nil, nil, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rawDo(t, c.method, base+c.path, c.body, c.hdr)
			if r.status != c.want {
				t.Fatalf("%s %s: status %d, want %d; body %.300q", c.method, strings.ReplaceAll(c.path, secret, "<secret>"), r.status, c.want, r.body)
			}
			if bytes.Contains(r.body, []byte(secret)) {
				t.Errorf("response body holds the secret")
			}
			if c.want == 200 && c.method == "POST" && !bytes.Contains(r.body, []byte(`"protocolVersion"`)) {
				t.Errorf("initialize answer has no protocolVersion: %.300q", r.body)
			}
			if c.path == "/health" && !json.Valid(r.body) {
				t.Errorf("/health body is not JSON: %q", r.body)
			}
		})
	}

	// A wrong secret must be indistinguishable from nothing being there: the
	// same status, body and headers as an unknown path.
	t.Run("404s are indistinguishable", func(t *testing.T) {
		ref := rawDo(t, "POST", base+"/nothing-here", []byte(initializeBody), nil)
		for _, path := range []string{"/mcp/wrong-secret-0123456789abcdef", "/mcp", "/mcp/" + secret[:len(secret)-1]} {
			for _, method := range []string{"POST", "GET", "DELETE"} {
				r := rawDo(t, method, base+path, []byte(initializeBody), nil)
				shown := method + " " + strings.ReplaceAll(path, secret, "<secret>")
				if r.status != ref.status || !bytes.Equal(r.body, ref.body) {
					t.Errorf("%s: %d %q, unknown path gives %d %q", shown, r.status, r.body, ref.status, ref.body)
				}
				for _, h := range []string{"Content-Type", "Allow", "Content-Length"} {
					if r.header.Get(h) != ref.header.Get(h) {
						t.Errorf("%s: header %s=%q, unknown path gives %q", shown, h, r.header.Get(h), ref.header.Get(h))
					}
				}
			}
		}
	})

	// The bridge still serves after all of that.
	cs := goSDKClient(t, b.URL())
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatalf("tools/list after the edge cases: %v", err)
	}
}

// TestRateLimit: the 61st tools/call within a minute gets 429 with Retry-After
// and a JSON-RPC error body; other methods are not counted.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	// "" leaves RATE_LIMIT_PER_MINUTE to the bridge's own default, 60.
	b := startBridge(t, mergeEnv(doubleEnv(d), map[string]string{"RATE_LIMIT_PER_MINUTE": ""}))
	url := b.URL()

	// 60 calls as fast as the bridge answers (8 at a time), so the bucket
	// cannot refill noticeably in between.
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]int, 60)
	sem := make(chan struct{}, 8)
	for i := range statuses {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			statuses[i] = postStatus(url, toolsCallBody(100+i))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("tools/call #%d: status %d, want 200 (limit is 60 per minute)", i+1, s)
		}
	}
	// One token per second refills at 60/min; allow for what refilled while the 60 ran.
	refilled := int(elapsed / time.Second)
	extra := 0
	var r rawResp
	for {
		r = rawDo(t, "POST", url, []byte(toolsCallBody(1000+extra)), nil)
		if r.status != 200 || extra > refilled {
			break
		}
		extra++
	}
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("tools/call #%d: status %d, want 429 (60 calls took %v); body %.300q", 61+extra, r.status, elapsed, r.body)
	}
	t.Logf("60 calls in %v; first 429 at call #%d", elapsed, 61+extra)
	assert429(t, r)

	// Other methods are not counted.
	if s := rawDo(t, "POST", url, []byte(toolsListBody(2)), nil).status; s != 200 {
		t.Errorf("tools/list after the limit: status %d, want 200", s)
	}
	if s := rawDo(t, "POST", url, []byte(initializeBody), nil).status; s != 200 {
		t.Errorf("initialize after the limit: status %d, want 200", s)
	}
	// And a real client sees the refusal as an error.
	cs := goSDKClient(t, url)
	_, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "one too many"}))
	if err == nil {
		t.Errorf("Go SDK tools/call over the limit succeeded")
	}
}

// TestRateLimitBatch: every tools/call inside a JSON-RPC batch counts.
func TestRateLimitBatch(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, mergeEnv(doubleEnv(d), map[string]string{"RATE_LIMIT_PER_MINUTE": "5"}))
	url := b.URL()

	lists := make([]string, 10)
	for i := range lists {
		lists[i] = toolsListBody(i + 1)
	}
	if r := rawDo(t, "POST", url, []byte(batch(lists...)), nil); r.status == http.StatusTooManyRequests {
		t.Fatalf("a batch of 10 tools/list was rate limited: only tools/call counts")
	}
	if r := rawDo(t, "POST", url, []byte(batch(toolsCallBody(1), toolsCallBody(2), toolsCallBody(3), toolsCallBody(4))), nil); r.status == http.StatusTooManyRequests {
		t.Fatalf("a batch of 4 tools/call under a limit of 5 got 429")
	}
	r := rawDo(t, "POST", url, []byte(batch(toolsCallBody(5), toolsListBody(6), toolsCallBody(7))), nil)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("a batch taking calls 5 and 6 under a limit of 5: status %d, want 429; body %.300q", r.status, r.body)
	}
	assert429(t, r)
}

// assert429 checks a rate-limit answer: Retry-After in whole seconds ≥ 1 and a JSON-RPC error body.
func assert429(t testing.TB, r rawResp) {
	t.Helper()
	ra := r.header.Get("Retry-After")
	if n, err := strconv.Atoi(ra); err != nil || n < 1 || n > 60 {
		t.Errorf("Retry-After = %q, want whole seconds in 1..60", ra)
	}
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		// A batch may be answered with a batch of errors.
		var arr []json.RawMessage
		if err2 := json.Unmarshal(r.body, &arr); err2 != nil || len(arr) == 0 {
			t.Fatalf("429 body is not JSON-RPC: %v; %.300q", err, r.body)
		}
		if err := json.Unmarshal(arr[0], &body); err != nil {
			t.Fatalf("429 batch body: %v", err)
		}
	}
	if body.JSONRPC != "2.0" || body.Error == nil || body.Error.Message == "" {
		t.Errorf("429 body is not a JSON-RPC error: %.300q", r.body)
	}
}

// postStatus POSTs a JSON-RPC body and returns the status (0 on a transport error).
// Safe to call from any goroutine.
func postStatus(url, body string) int {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := rawClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

package deepseektest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

func newDouble(t *testing.T, opts ...deepseektest.Option) *deepseektest.Server {
	t.Helper()
	s := deepseektest.New(opts...)
	t.Cleanup(s.Close)
	return s
}

type call struct {
	path   string
	header map[string]string // "" value deletes
	body   any
}

// do posts JSON; by default with the double's Bearer key.
func do(t *testing.T, s *deepseektest.Server, c call) *http.Response {
	t.Helper()
	b, ok := c.body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(c.body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+c.path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Key())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", c.path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func decode(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return m
}

func chatBody(model string, stream bool, msgs ...map[string]any) map[string]any {
	if len(msgs) == 0 {
		msgs = []map[string]any{{"role": "user", "content": "hi"}}
	}
	return map[string]any{"model": model, "messages": msgs, "stream": stream, "max_tokens": 100}
}

func anthropicBody(stream bool, tools bool, msgs ...map[string]any) map[string]any {
	if len(msgs) == 0 {
		msgs = []map[string]any{{"role": "user", "content": "hi"}}
	}
	b := map[string]any{"model": "deepseek-flash", "messages": msgs, "stream": stream, "max_tokens": 1000}
	if tools {
		b["tools"] = []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}
	}
	return b
}

// sseEvent is one parsed SSE event.
type sseEvent struct {
	name, data string
	comment    bool
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			out = append(out, sseEvent{comment: true, data: line})
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	return out
}

func TestOpenAINonStreamedShape(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	s.Script(deepseektest.Reasoned("why", "because").WithUsage(deepseektest.Usage{InputTokens: 50, CacheHitTokens: 20, OutputTokens: 9, ReasoningTokens: 3}))
	resp := do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-v4-pro", false)})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	m := decode(t, resp.Body)
	got := fmt.Sprint(m["object"], " ", m["model"], " ", m["choices"], " ", m["usage"])
	want := "chat.completion deepseek-v4-pro [map[finish_reason:stop index:0 logprobs:<nil> message:map[content:because reasoning_content:why role:assistant]]] " +
		"map[completion_tokens:9 completion_tokens_details:map[reasoning_tokens:3] prompt_cache_hit_tokens:20 prompt_cache_miss_tokens:30 prompt_tokens:50 total_tokens:59]"
	if got != want {
		t.Errorf("completion\n got %s\nwant %s", got, want)
	}
}

func TestOpenAIStreamShape(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	s.Script(
		deepseektest.Reasoned("think hard", "two words").WithKeepAlives(2).WithUsage(deepseektest.Usage{InputTokens: 10, OutputTokens: 5, ReasoningTokens: 2}),
		deepseektest.ToolCalls(deepseektest.Call("get_weather", map[string]any{"city": "Hangzhou, a long city name"})),
	)
	resp := do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", true)})
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d content-type %q", resp.StatusCode, ct)
	}
	events := readSSE(t, resp.Body)
	var kinds []string
	var final map[string]any
	for _, e := range events {
		switch {
		case e.comment:
			kinds = append(kinds, "keepalive")
		case e.data == "[DONE]":
			kinds = append(kinds, "done")
		default:
			var c map[string]any
			if err := json.Unmarshal([]byte(e.data), &c); err != nil {
				t.Fatalf("chunk %q: %v", e.data, err)
			}
			if c["object"] != "chat.completion.chunk" {
				t.Errorf("object %v", c["object"])
			}
			ch := c["choices"].([]any)[0].(map[string]any)
			d := ch["delta"].(map[string]any)
			switch {
			case ch["finish_reason"] != nil:
				kinds = append(kinds, "finish:"+ch["finish_reason"].(string))
				final = c
			case d["role"] != nil:
				kinds = append(kinds, "role")
			case d["reasoning_content"] != nil:
				kinds = append(kinds, "r:"+d["reasoning_content"].(string))
			default:
				kinds = append(kinds, "c:"+d["content"].(string))
			}
		}
	}
	if got, want := strings.Join(kinds, "|"), "keepalive|keepalive|role|r:think |r:hard|c:two |c:words|finish:stop|done"; got != want {
		t.Errorf("stream\n got %s\nwant %s", got, want)
	}
	if u := fmt.Sprint(final["usage"]); u != "map[completion_tokens:5 completion_tokens_details:map[reasoning_tokens:2] prompt_cache_hit_tokens:0 prompt_cache_miss_tokens:10 prompt_tokens:10 total_tokens:15]" {
		t.Errorf("final usage %s", u)
	}

	// A tool-call turn streams content null and the arguments in pieces.
	resp = do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", true)})
	var args, name, finish string
	for _, e := range readSSE(t, resp.Body) {
		if e.data == "[DONE]" || e.comment {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatal(err)
		}
		d := c.Choices[0].Delta
		if d.Content != nil && *d.Content != "" {
			t.Errorf("tool-call turn streamed content %q", *d.Content)
		}
		for _, tc := range d.ToolCalls {
			name += tc.Function.Name
			args += tc.Function.Arguments
		}
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		}
	}
	if name != "get_weather" || args != `{"city":"Hangzhou, a long city name"}` || finish != "tool_calls" {
		t.Errorf("tool call %q %q finish %q", name, args, finish)
	}
}

func TestAuthModelsAndDocumentedErrors(t *testing.T) {
	t.Parallel()
	s := newDouble(t, deepseektest.WithKey("sk-test-double-key-abcd"), deepseektest.WithModels("deepseek-custom"))
	cases := []struct {
		name   string
		c      call
		status int
		body   string
	}{
		{"openai no auth header", call{path: "/chat/completions", header: map[string]string{"Authorization": ""}, body: chatBody("deepseek-flash", false)},
			401, `{"error":{"message":"Authentication Fails (auth header format should be Bearer sk-...)","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{"openai wrong key", call{path: "/chat/completions", header: map[string]string{"Authorization": "Bearer sk-test-wrong-wxyz"}, body: chatBody("deepseek-flash", false)},
			401, `{"error":{"message":"Authentication Fails, Your api key: ****wxyz is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{"openai x-api-key is not enough", call{path: "/chat/completions", header: map[string]string{"Authorization": "", "x-api-key": "sk-test-double-key-abcd"}, body: chatBody("deepseek-flash", false)},
			401, `{"error":{"message":"Authentication Fails (auth header format should be Bearer sk-...)","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{"anthropic wrong x-api-key", call{path: "/anthropic/v1/messages", header: map[string]string{"Authorization": "", "x-api-key": "nope"}, body: anthropicBody(false, true)},
			401, `{"error":{"message":"Authentication Fails, Your api key: ****nope is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{"anthropic count_tokens without key", call{path: "/anthropic/v1/messages/count_tokens", header: map[string]string{"Authorization": ""}, body: anthropicBody(false, false)},
			401, `{"error":{"message":"Authentication Fails (auth header format should be Bearer sk-...)","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{"anthropic x-api-key", call{path: "/anthropic/v1/messages", header: map[string]string{"Authorization": "", "x-api-key": "sk-test-double-key-abcd"}, body: anthropicBody(false, false)},
			200, ""},
		{"anthropic bearer", call{path: "/anthropic/v1/messages", body: anthropicBody(false, false)}, 200, ""},
		{"unknown model", call{path: "/chat/completions", body: chatBody("gpt-4o", false)},
			400, `{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
		{"added model", call{path: "/chat/completions", body: chatBody("deepseek-custom", false)}, 200, ""},
		{"legacy alias", call{path: "/chat/completions", body: chatBody("deepseek-reasoner", false)}, 200, ""},
		{"anthropic maps claude names", call{path: "/anthropic/v1/messages", body: map[string]any{"model": "claude-haiku-4-5", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "quota"}}}}, 200, ""},
		{"anthropic unknown model", call{path: "/anthropic/v1/messages", body: map[string]any{"model": "gpt-4o", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "x"}}}},
			400, `{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
		{"not JSON", call{path: "/chat/completions", body: []byte("{nope")}, 400,
			`{"error":{"message":"Failed to deserialize the JSON body into the target type","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
		{"v1 prefix is not served", call{path: "/v1/chat/completions", body: chatBody("deepseek-flash", false)}, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, s, tc.c)
			body := strings.TrimSpace(readAll(t, resp.Body))
			if resp.StatusCode != tc.status || tc.body != "" && body != tc.body {
				t.Errorf("got %d %s\nwant %d %s", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	if o, a := s.Pending(); o != 0 || a != 0 {
		t.Errorf("pending %d/%d", o, a)
	}
	for _, r := range append(s.Requests(), s.AnthropicRequests()...) {
		if r.Scripted {
			t.Errorf("request %s consumed a scripted turn though none was scripted", r.Path)
		}
	}

	errCases := []struct {
		status     int
		retryAfter string
		body       string
	}{
		{400, "", `{"error":{"message":"Invalid request: the request body has an invalid format","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
		{401, "", `{"error":{"message":"Authentication Fails, Your api key: ****-key is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`},
		{402, "", `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`},
		{422, "", `{"error":{"message":"Invalid parameters: max_tokens must be a positive integer","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
		{429, "7", `{"error":{"message":"Rate Limit Reached: you are sending requests too quickly, please slow down","type":"rate_limit_error","param":null,"code":"invalid_request_error"}}`},
		{500, "", `{"error":{"message":"Server Error: the server had an internal error, please retry after a brief wait","type":"server_error","param":null,"code":"invalid_request_error"}}`},
		{503, "", `{"error":{"message":"Server Overloaded: the server is overloaded due to high traffic, please retry after a brief wait","type":"server_error","param":null,"code":"invalid_request_error"}}`},
	}
	for _, tc := range errCases {
		t.Run(fmt.Sprint("scripted ", tc.status), func(t *testing.T) {
			turn := deepseektest.Error(tc.status)
			if tc.retryAfter != "" {
				turn = deepseektest.RateLimited(7)
			}
			for _, side := range []string{"/chat/completions", "/anthropic/v1/messages"} {
				body := chatBody("deepseek-flash", true)
				if strings.HasPrefix(side, "/anthropic") {
					s.ScriptAnthropic(turn)
					body = anthropicBody(true, true)
				} else {
					s.Script(turn)
				}
				resp := do(t, s, call{path: side, body: body})
				got := strings.TrimSpace(readAll(t, resp.Body))
				if resp.StatusCode != tc.status || got != tc.body || resp.Header.Get("Retry-After") != tc.retryAfter {
					t.Errorf("%s: got %d Retry-After %q %s\nwant %d %q %s", side, resp.StatusCode, resp.Header.Get("Retry-After"), got, tc.status, tc.retryAfter, tc.body)
				}
			}
		})
	}
}

// GET /models lists the accepted ids for the right key and answers the
// chat endpoint's 401 for a wrong one (bridgectl doctor checks a key this way).
func TestModelsList(t *testing.T) {
	s := deepseektest.New(deepseektest.WithModels("deepseek-extra"))
	t.Cleanup(s.Close)
	get := func(key string) (int, string) { return getWithKey(t, s.URL()+"/models", key) }
	status, body := get(s.Key())
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil || list.Object != "list" {
		t.Fatalf("GET /models: %d %s (%v)", status, body, err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if !slices.IsSorted(ids) || !slices.Contains(ids, "deepseek-chat") || !slices.Contains(ids, "deepseek-extra") || !strings.Contains(body, `"owned_by":"deepseek"`) {
		t.Errorf("models %q in %s", ids, body)
	}
	if status, body := get("sk-wrong-abcd"); status != 401 || !strings.Contains(body, "Authentication Fails, Your api key: ****abcd is invalid") {
		t.Errorf("wrong key: %d %s", status, body)
	}
}

// getWithKey GETs url with key as the bearer token: the status and the body.
func getWithKey(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// GET /user/balance in DeepSeek's documented shape: is_available and the
// balance per currency; "0.00" is an empty balance; a wrong key gets 401.
func TestUserBalance(t *testing.T) {
	for _, tt := range []struct {
		total string
		want  string
	}{
		{"110.00", `{"is_available":true,"balance_infos":[{"currency":"CNY","total_balance":"110.00","granted_balance":"0.00","topped_up_balance":"110.00"}]}`},
		{"0.00", `{"is_available":false,"balance_infos":[{"currency":"CNY","total_balance":"0.00","granted_balance":"0.00","topped_up_balance":"0.00"}]}`},
	} {
		s := deepseektest.New(deepseektest.WithBalance(tt.total))
		for _, key := range []string{s.Key(), "sk-wrong-abcd"} {
			status, body := getWithKey(t, s.URL()+"/user/balance", key)
			switch {
			case key == s.Key() && (status != 200 || strings.TrimSpace(body) != tt.want):
				t.Errorf("balance %s: %d %s", tt.total, status, body)
			case key != s.Key() && status != 401:
				t.Errorf("wrong key: %d %s", status, body)
			}
		}
		s.Close()
	}
}

func TestMissingReasoningContentIsRejected(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	s.Script(
		deepseektest.ToolCalls(deepseektest.Call("lookup", `{"q":1}`)).WithReasoning("I will look it up"),
		deepseektest.ToolCalls(deepseektest.Call("plain", nil)),
	)
	first := decode(t, do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", false)}).Body)
	msg := first["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != nil || msg["reasoning_content"] != "I will look it up" {
		t.Fatalf("tool-call message %v: want content null and the reasoning", msg)
	}
	second := decode(t, do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", false)}).Body)
	plain := second["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)

	user := map[string]any{"role": "user", "content": "q"}
	withoutReasoning := map[string]any{"role": "assistant", "content": nil, "tool_calls": msg["tool_calls"]}
	withReasoning := map[string]any{"role": "assistant", "content": nil, "tool_calls": msg["tool_calls"], "reasoning_content": "I will look it up"}
	id := msg["tool_calls"].([]any)[0].(map[string]any)["id"]
	result := map[string]any{"role": "tool", "tool_call_id": id, "content": "found it"}
	plainBack := map[string]any{"role": "assistant", "content": nil, "tool_calls": plain["tool_calls"]}

	cases := []struct {
		name   string
		msgs   []map[string]any
		status int
	}{
		{"reasoning dropped", []map[string]any{user, withoutReasoning, result}, 400},
		{"reasoning passed back", []map[string]any{user, withReasoning, result}, 200},
		{"tool call that had no reasoning", []map[string]any{user, plainBack, result}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", false, tc.msgs...)})
			body := strings.TrimSpace(readAll(t, resp.Body))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 400 && body != deepseektest.MissingReasoningBody {
				t.Errorf("body %s", body)
			}
		})
	}
	if got := s.LastToolResultTexts(deepseektest.SideOpenAI); len(got) != 1 || got[0] != "found it" {
		t.Errorf("LastToolResultTexts = %q", got)
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	s.ScriptAnthropic(
		deepseektest.Turn{Reasoning: "let me think", Text: "Running it now.", ToolCalls: []deepseektest.ToolCall{
			deepseektest.Call("Bash", map[string]any{"command": "echo hello-from-bash", "description": "greet"}),
		}, Usage: &deepseektest.Usage{InputTokens: 300, CacheHitTokens: 100, OutputTokens: 42}},
	)
	resp := do(t, s, call{path: "/anthropic/v1/messages?beta=true", body: anthropicBody(true, true)})
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d content-type %q", resp.StatusCode, ct)
	}
	var seq []string
	texts := map[string]string{}
	var stop, startUsage, endUsage string
	for _, e := range readSSE(t, resp.Body) {
		var d map[string]any
		if err := json.Unmarshal([]byte(e.data), &d); err != nil {
			t.Fatalf("event %s data %q: %v", e.name, e.data, err)
		}
		if d["type"] != e.name {
			t.Errorf("event %q carries type %v", e.name, d["type"])
		}
		switch e.name {
		case "message_start":
			startUsage = fmt.Sprint(d["message"].(map[string]any)["usage"])
			seq = append(seq, e.name)
		case "content_block_start":
			cb := d["content_block"].(map[string]any)
			seq = append(seq, fmt.Sprintf("start:%v:%v", d["index"], cb["type"]))
			if cb["type"] == "tool_use" {
				texts["tool_name"] = fmt.Sprint(cb["name"])
			}
		case "content_block_delta":
			delta := d["delta"].(map[string]any)
			typ := delta["type"].(string)
			if len(seq) == 0 || seq[len(seq)-1] != typ {
				seq = append(seq, typ)
			}
			for _, k := range []string{"thinking", "text", "partial_json", "signature"} {
				if v, ok := delta[k].(string); ok {
					texts[k] += v
				}
			}
		case "content_block_stop":
			seq = append(seq, fmt.Sprintf("stop:%v", d["index"]))
		case "message_delta":
			stop = fmt.Sprint(d["delta"].(map[string]any)["stop_reason"])
			endUsage = fmt.Sprint(d["usage"])
			seq = append(seq, e.name)
		case "message_stop":
			seq = append(seq, e.name)
		}
	}
	want := "message_start start:0:thinking thinking_delta signature_delta stop:0 start:1:text text_delta stop:1 start:2:tool_use input_json_delta stop:2 message_delta message_stop"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if texts["thinking"] != "let me think" || texts["text"] != "Running it now." || texts["signature"] == "" || texts["tool_name"] != "Bash" {
		t.Errorf("block contents %q", texts)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(texts["partial_json"]), &input); err != nil || input["command"] != "echo hello-from-bash" {
		t.Errorf("tool input %q: %v", texts["partial_json"], err)
	}
	if stop != "tool_use" {
		t.Errorf("stop_reason %q", stop)
	}
	if startUsage != "map[cache_creation_input_tokens:0 cache_read_input_tokens:100 input_tokens:200 output_tokens:0]" ||
		endUsage != "map[cache_creation_input_tokens:0 cache_read_input_tokens:100 input_tokens:200 output_tokens:42]" {
		t.Errorf("usage start %s end %s", startUsage, endUsage)
	}
	if r := s.AnthropicRequests(); len(r) != 1 || r[0].RawQuery != "beta=true" || !r[0].Scripted {
		t.Errorf("recorded %+v", r)
	}
}

func TestAnthropicJSONCountTokensAndSideRequests(t *testing.T) {
	t.Parallel()
	s := newDouble(t, deepseektest.WithSideTurn(deepseektest.Text("side answer")))
	s.ScriptAnthropic(deepseektest.ReasoningOnly("out of budget"), deepseektest.Text("main answer"))

	// A request without tools (title generation, quota probe) is a side request.
	side := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, false)}).Body)
	if fmt.Sprint(side["content"]) != "[map[text:side answer type:text]]" {
		t.Errorf("side answer %v", side)
	}
	ct := decode(t, do(t, s, call{path: "/anthropic/v1/messages/count_tokens", body: anthropicBody(false, true)}).Body)
	if n, _ := ct["input_tokens"].(float64); n < 1 {
		t.Errorf("count_tokens %v", ct)
	}
	if _, a := s.Pending(); a != 2 {
		t.Fatalf("side request or count_tokens consumed scripted turns: %d left, want 2", a)
	}

	first := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true)}).Body)
	if first["stop_reason"] != "max_tokens" || fmt.Sprint(first["content"]) != "[map[signature:double-signature-"+first["id"].(string)+" thinking:out of budget type:thinking]]" {
		t.Errorf("reasoning-only message %v", first)
	}
	second := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true)}).Body)
	if second["stop_reason"] != "end_turn" || fmt.Sprint(second["content"]) != "[map[text:main answer type:text]]" || second["type"] != "message" {
		t.Errorf("text message %v", second)
	}
	third := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true)}).Body)
	if fmt.Sprint(third["content"]) != "[map[text:"+deepseektest.DefaultText+" type:text]]" {
		t.Errorf("default answer %v", third)
	}
	var flags []string
	for _, r := range s.AnthropicRequests() {
		flags = append(flags, fmt.Sprintf("%s:scripted=%v:side=%v", strings.TrimPrefix(r.Path, "/anthropic/v1/"), r.Scripted, r.SideRequest))
	}
	want := "messages:scripted=false:side=true messages/count_tokens:scripted=false:side=false messages:scripted=true:side=false messages:scripted=true:side=false messages:scripted=false:side=false"
	if got := strings.Join(flags, " "); got != want {
		t.Errorf("recorded\n got %s\nwant %s", got, want)
	}
}

func TestFuncTurnReversesToolResult(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	reverse := func(r deepseektest.Request) deepseektest.Turn {
		res := r.ToolResultTexts()
		if len(res) != 1 {
			return deepseektest.Error(400)
		}
		b := []rune(res[0])
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		return deepseektest.Text(string(b))
	}
	s.ScriptAnthropic(deepseektest.Func(reverse), deepseektest.Func(reverse))
	msgs := []map[string]any{
		{"role": "user", "content": "go"},
		{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
		{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "hello-from-bash"}}},
	}
	got := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true, msgs...)}).Body)
	if fmt.Sprint(got["content"]) != "[map[text:hsab-morf-olleh type:text]]" {
		t.Errorf("reversed answer %v", got["content"])
	}
	// tool_result content as a list of text blocks.
	msgs[2] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1",
		"content": []any{map[string]any{"type": "text", "text": "abc"}}}}}
	got = decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true, msgs...)}).Body)
	if fmt.Sprint(got["content"]) != "[map[text:cba type:text]]" {
		t.Errorf("reversed answer %v", got["content"])
	}
	if texts := s.LastToolResultTexts(deepseektest.SideAnthropic); len(texts) != 1 || texts[0] != "abc" {
		t.Errorf("LastToolResultTexts %q", texts)
	}
}

func TestBrokenStreams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn deepseektest.Turn
		want string // substring of the client-side read error or body
	}{
		{"cut", deepseektest.Text("a b c").WithBreak(deepseektest.BreakCut), "unexpected EOF"},
		{"malformed", deepseektest.Text("a b c").WithBreak(deepseektest.BreakMalformed), "not json"},
	}
	for _, tc := range cases {
		for _, side := range []string{"/chat/completions", "/anthropic/v1/messages"} {
			t.Run(tc.name+side, func(t *testing.T) {
				t.Parallel()
				s := newDouble(t)
				body := chatBody("deepseek-flash", true)
				if strings.HasPrefix(side, "/anthropic") {
					s.ScriptAnthropic(tc.turn)
					body = anthropicBody(true, true)
				} else {
					s.Script(tc.turn)
				}
				resp := do(t, s, call{path: side, body: body})
				b, err := io.ReadAll(resp.Body)
				text := string(b)
				if err != nil {
					text += err.Error()
				}
				if !strings.Contains(text, tc.want) || strings.Contains(text, "[DONE]") || strings.Contains(text, "message_stop") {
					t.Errorf("stream %q (err %v), want it broken with %q", b, err, tc.want)
				}
			})
		}
	}
	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		s := newDouble(t)
		s.Script(deepseektest.Reset())
		b, _ := json.Marshal(chatBody("deepseek-flash", true))
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+s.Key())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want a dropped connection", resp.StatusCode)
		}
	})
}

func TestCloseAbandonsDelayedAnswers(t *testing.T) {
	t.Parallel()
	s := deepseektest.New()
	arrived := make(chan struct{})
	s.Script(deepseektest.Func(func(deepseektest.Request) deepseektest.Turn {
		close(arrived)
		return deepseektest.Text("late").WithDelay(time.Hour)
	}))
	errc := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(chatBody("deepseek-flash", true))
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+s.Key())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = errors.New("no error")
			}
		}
		errc <- err
	}()
	select {
	case <-arrived:
	case err := <-errc:
		t.Fatalf("request ended before Close: %v", err)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := <-errc; err == nil {
		t.Error("the client got no error from a closed double")
	}
	s.Close() // idempotent
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := newDouble(t)
	const n = 20
	for i := range n {
		s.Script(deepseektest.Text(fmt.Sprint("answer-", i)))
		s.ScriptAnthropic(deepseektest.Text(fmt.Sprint("a-answer-", i)))
	}
	var wg sync.WaitGroup
	answers := make(chan string, 2*n)
	for range n {
		wg.Go(func() {
			m := decode(t, do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", false)}).Body)
			answers <- m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		})
		wg.Go(func() {
			m := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, true)}).Body)
			answers <- m["content"].([]any)[0].(map[string]any)["text"].(string)
		})
	}
	wg.Wait()
	close(answers)
	seen := map[string]bool{}
	for a := range answers {
		seen[a] = true
	}
	if len(seen) != 2*n || len(s.Requests()) != n || len(s.AnthropicRequests()) != n {
		t.Errorf("%d distinct answers, %d+%d requests; want %d, %d+%d", len(seen), len(s.Requests()), len(s.AnthropicRequests()), 2*n, n, n)
	}
}

func TestParseScript(t *testing.T) {
	t.Parallel()
	good := `[{"text":"o1"},{"side":"anthropic","tool_calls":[{"name":"Bash","arguments":{"command":"ls"}}]},
	 {"side":"both","status":429,"retry_after":2},{"text":"slow","delay_ms":5,"chunk_delay_ms":1,"keep_alives":2,"break":"cut",
	 "usage":{"input_tokens":10,"cache_hit_tokens":4,"output_tokens":3,"reasoning_tokens":1}}]`
	o, a, err := deepseektest.ParseScript([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(o) != 3 || len(a) != 2 {
		t.Fatalf("queues %d/%d, want 3/2", len(o), len(a))
	}
	if o[0].Text != "o1" || o[1].Status != 429 || o[1].RetryAfter != 2 || a[1].Status != 429 ||
		string(a[0].ToolCalls[0].Arguments) != `{"command":"ls"}` || o[2].Delay != 5*time.Millisecond ||
		o[2].ChunkDelay != time.Millisecond || o[2].KeepAlives != 2 || o[2].Break != deepseektest.BreakCut || o[2].Usage.CacheHitTokens != 4 {
		t.Errorf("parsed %+v / %+v", o, a)
	}
	bad := []struct{ script, want string }{
		{`{"text":"x"}`, "not a JSON list"},
		{`[{"side":"gemini"}]`, "unknown side"},
		{`[{"break":"explode"}]`, "unknown break"},
		{`[{"status":200}]`, "not an error status"},
		{`[{"tool_calls":[{"arguments":{}}]}]`, "has no name"},
	}
	for _, tc := range bad {
		if _, _, err := deepseektest.ParseScript([]byte(tc.script)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseScript(%s) = %v, want %q", tc.script, err, tc.want)
		}
	}
}

func TestRequestLogRedactsKeys(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	s := newDouble(t, deepseektest.WithRequestLog(lockedWriter{&mu, &buf}))
	do(t, s, call{path: "/chat/completions", body: chatBody("deepseek-flash", false)})
	do(t, s, call{path: "/anthropic/v1/messages", header: map[string]string{"x-api-key": s.Key()}, body: anthropicBody(false, true)})
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(buf.String(), s.Key()) || !strings.Contains(buf.String(), `"Authorization":"[redacted]"`) {
		t.Errorf("log:\n%s", buf.String())
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first["path"] != "/chat/completions" || first["model"] != "deepseek-flash" {
		t.Errorf("first line %v: %v", first, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestWithSideRule(t *testing.T) {
	t.Parallel()
	s := newDouble(t, deepseektest.WithSideRule(func(r deepseektest.Request) bool { return r.MaxTokens() == 1 }))
	s.ScriptAnthropic(deepseektest.Text("scripted"))
	probe := map[string]any{"model": "deepseek-flash", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": "quota"}}}
	if got := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: probe}).Body); fmt.Sprint(got["content"]) != "[map[text:"+deepseektest.SideText+" type:text]]" {
		t.Errorf("probe answer %v", got["content"])
	}
	if got := decode(t, do(t, s, call{path: "/anthropic/v1/messages", body: anthropicBody(false, false)}).Body); fmt.Sprint(got["content"]) != "[map[text:scripted type:text]]" {
		t.Errorf("tool-less main request answer %v", got["content"])
	}
}

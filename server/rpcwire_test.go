package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// TestMCPGoChangesBigIDs is why exactIDs exists: mcp-go answers a request
// id of 2^53+1 with another number. When this fails, mcp-go keeps ids as sent
// and the swap can go.
func TestMCPGoChangesBigIDs(t *testing.T) {
	env := newTestEnv(t, Options{})
	resp := env.srv.MCP().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`))
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"id":9007199254740992`)) {
		t.Fatalf("mcp-go answered %s: it no longer rounds the id through float64", b)
	}
}

// TestIDsRoundTripExactly: every answer carries the id (and every progress
// notification the progress token) byte for byte as the client sent it, on
// the SSE path (tools/call), the JSON path (tools/list) and mcp-go's error path.
func TestIDsRoundTripExactly(t *testing.T) {
	env := newTestEnv(t, Options{Flash: &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		req.Progress(deepseek.ProgressEvent{Phase: "streaming", Tokens: 3})
		return deepseek.FlashResult{Answer: "ok", Model: "m", FinishReason: "stop"}, nil
	}}})
	call := func(id, token string) string {
		meta := ""
		if token != "" {
			meta = `,"_meta":{"progressToken":` + token + `}`
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x"}` + meta + `}}`
	}
	tests := []struct {
		name, body, id, token string
		sse                   bool
	}{
		{"2^53+1 on tools/call", call("9007199254740993", ""), "9007199254740993", "", true},
		{"2^53+1 as id and token", call("9007199254740993", "9007199254740995"), "9007199254740993", "9007199254740995", true},
		{"negative big", call("-9007199254740993", ""), "-9007199254740993", "", true},
		{"a fraction written long", call("1.50", ""), "1.50", "", true},
		{"an exponent", call("1e3", "2E2"), "1e3", "2E2", true},
		{"ordinary number", call("42", "7"), "42", "7", true},
		{"string", call(`"req-1"`, `"tok"`), `"req-1"`, `"tok"`, true},
		{"2^53+1 on tools/list", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list","params":{}}`, "9007199254740993", "", false},
		{"2^53+1 on an unknown method", `{"jsonrpc":"2.0","id":9007199254740993,"method":"no/such","params":{}}`, "9007199254740993", "", false},
		{"2^53+1 on an unknown tool", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, "9007199254740993", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, env.url, tt.body, mcpHeaders)
			if got := strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream"); got != tt.sse {
				t.Fatalf("SSE = %v, want %v: %s", got, tt.sse, r.body)
			}
			msgs := messages(t, r)
			last := msgs[len(msgs)-1]
			if string(last.ID) != tt.id {
				t.Fatalf("answer id %s, sent %s; body %s", last.ID, tt.id, r.body)
			}
			progress := 0
			for _, m := range msgs[:len(msgs)-1] {
				var p struct {
					Token json.RawMessage `json:"progressToken"`
				}
				if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
					continue
				}
				progress++
				if string(p.Token) != tt.token {
					t.Errorf("progress token %s, sent %s", p.Token, tt.token)
				}
			}
			if tt.token != "" && progress == 0 {
				t.Errorf("no progress notification: %s", r.body)
			}
			if bytes.Contains(r.body, []byte("bridge-rpc-id-")) {
				t.Errorf("a stand-in reached the client: %s", r.body)
			}
		})
	}
}

// TestExactIDsLeavesOrdinaryBodies: a body mcp-go echoes faithfully is passed
// on as it is, byte for byte.
func TestExactIDsLeavesOrdinaryBodies(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"9007199254740993","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
	} {
		out, swaps := exactIDs([]byte(body))
		if swaps != nil || string(out) != body {
			t.Errorf("%s: rewritten to %s (%d swaps)", body, out, len(swaps))
		}
	}
}

func nested(depth int, inner string) string {
	return strings.Repeat(`{"a":`, depth) + inner + strings.Repeat(`}`, depth)
}

// TestDeepJSONIsNestedTooDeeply: valid JSON nested past MaxJSONDepth is
// refused as nested too deeply (encoding/json, and so mcp-go, called 10,000
// levels "not valid json"); brackets inside strings do not count.
func TestDeepJSONIsNestedTooDeeply(t *testing.T) {
	env := newTestEnv(t, Options{})
	want := fmt.Sprintf("request body is nested too deeply: arrays and objects may nest at most %d levels here", MaxJSONDepth)
	for _, depth := range []int{MaxJSONDepth, 10_000} {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x","extra":` + nested(depth, "1") + `}}}`
		r := post(t, env.url, body, mcpHeaders)
		msgs := messages(t, r)
		if r.status != http.StatusBadRequest || msgs[0].Error == nil || msgs[0].Error.Code != -32700 || msgs[0].Error.Message != want {
			t.Errorf("depth %d: status %d, %s", depth, r.status, r.body)
		}
	}
	// At the limit (the message, params and arguments take 3 levels): answered
	// by the tool, whose argument check refuses the argument it does not know.
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x","extra":` + nested(MaxJSONDepth-3, "1") + `}}}`
	if res := finalResult(t, messages(t, post(t, env.url, body, mcpHeaders))); !strings.HasPrefix(res.text(), `unknown argument "extra"`) {
		t.Errorf("%d levels not answered by the tool: %s", MaxJSONDepth, res.text())
	}

	for _, tt := range []struct {
		b    string
		deep bool
	}{
		{nested(3, "1"), false},
		{nested(4, "1"), true},
		{`{"s":"[[[[[[{{{{"}`, false},
		{`{"s":"\"[[[[[["}`, false},
		{`{"s":"\\"}` + strings.Repeat("[", 4), true},
		{`[[[[`, true},
	} {
		if got := nestedDeeper([]byte(tt.b), 3); got != tt.deep {
			t.Errorf("nestedDeeper(%s, 3) = %v", tt.b, got)
		}
	}
}

package e2e

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// deepseek_flash takes a conversation instead of a task, and asks for
// DeepSeek's JSON output: the request that reaches the double carries the
// turns in order after the mode's system prompt, response_format
// json_object and the word json in the prompt (DeepSeek's JSON output wants
// it); the answer comes back parsed in structuredContent.json, and one that
// does not parse is an error result carrying it.
func TestFlashTakesAConversationAndAnswersJSON(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	d.Script(deepseektest.Text(`{"primes": [2, 3], "note": "two"}`), deepseektest.Text("Sure! Here are two primes: 2 and 3."))
	b := startBridge(t, doubleEnv(d))
	cs := goSDKClient(t, b.URL())
	turns := []any{
		map[string]any{"role": "system", "content": "Be terse."},
		map[string]any{"role": "user", "content": "Name a prime."},
		map[string]any{"role": "assistant", "content": "2"},
		map[string]any{"role": "user", "content": "Now two primes, as an object with a primes list."},
	}
	res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"messages": turns, "response_format": "json", "files": "primes.txt: 2 3 5"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("IsError: %s", textOf(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Answer string `json:"answer"`
		JSON   any    `json:"json"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"primes": []any{2.0, 3.0}, "note": "two"}
	if !reflect.DeepEqual(out.JSON, want) {
		t.Errorf("structuredContent.json = %#v, want %#v (%s)", out.JSON, want, raw)
	}
	reqs := d.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	body := reqs[0].JSON
	if rf, _ := body["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format %v", body["response_format"])
	}
	msgs := reqs[0].Messages()
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m["role"].(string))
	}
	if strings.Join(roles, ",") != "system,system,user,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	if sys, _ := msgs[0]["content"].(string); !strings.Contains(sys, "json") || !strings.Contains(sys, "Mode: analyze") {
		t.Errorf("the bridge's system prompt lacks the word json or the mode: %q", sys)
	}
	if msgs[1]["content"] != "Be terse." || msgs[2]["content"] != "Name a prime." || msgs[3]["content"] != "2" {
		t.Errorf("the caller's turns changed: %v", msgs[1:4])
	}
	if last, _ := msgs[4]["content"].(string); !strings.Contains(last, "Now two primes") || !strings.Contains(last, "primes.txt: 2 3 5") {
		t.Errorf("the last turn lacks its text or the files: %q", last)
	}

	// An answer that is not JSON is an error that carries it.
	res, err = cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "two primes as json", "response_format": "json"}))
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(res); !res.IsError || !strings.Contains(text, "not valid JSON") || !strings.Contains(text, "Here are two primes") {
		t.Errorf("a prose answer to a json call: IsError %v: %s", res.IsError, text)
	}

	// Exactly one of task and messages, and a conversation ends with the
	// user's turn; neither reaches DeepSeek.
	for _, args := range []map[string]any{
		{"task": "x", "messages": turns},
		{},
		{"messages": []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "hello"}}},
		{"messages": []any{map[string]any{"role": "user", "content": "  "}}},
	} {
		res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", args))
		if err != nil {
			t.Fatal(err)
		}
		if text := textOf(res); !res.IsError || !(strings.Contains(text, "exactly one of task") || strings.Contains(text, "ends with the user's turn") || strings.Contains(text, "is empty") || strings.Contains(text, "the task is empty")) {
			t.Errorf("%v: IsError %v: %s", args, res.IsError, text)
		}
	}
	if n := len(d.Requests()); n != 2 {
		t.Errorf("%d upstream requests, want 2: a refused call reached DeepSeek", n)
	}
}

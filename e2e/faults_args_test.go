package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

// Input the bridge used to drop or change without a word (issue 18, part 4),
// and a SIGTERM during a flash call, against a real `bridge serve`.

// TestFaultArgsRefused: through the official Go SDK client, every wrong type
// and every number out of range is refused with the argument's name and what
// it needs; DeepSeek is never asked. A right call's files reach DeepSeek.
func TestFaultArgsRefused(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	cs := goSDKClient(t, b.URL())
	files := "inline material the task is about, pasted as text (file contents, diffs, logs); optional"
	steps := fmt.Sprintf("tool-call ceiling for this job (at most %d, the default)", config.DefaultMaxSteps)
	secs := int(config.DefaultJobTimeout / time.Second)
	timeout := fmt.Sprintf("wall-clock ceiling for this job in seconds (at most %d, the default)", secs)
	tests := []struct{ tool, args, want string }{
		{"deepseek_flash", `{"task":"x","files":["a.go"]}`, "files must be a string, not an array: " + files},
		{"deepseek_flash", `{"task":"x","files":{"a.go":"package a"}}`, "files must be a string, not an object: " + files},
		{"deepseek_flash", `{"task":"x","mode":1}`, "mode must be a string, not a number: analyze | review | code | summarize (default analyze)"},
		{"deepseek_flash", `{"task":12345}`, "task must be a string, not a number: what DeepSeek should do, self-contained: it sees nothing of this conversation"},
		{"deepseek_agent_start", `{"task":"x","workspace":"/nowhere","max_steps":1e30}`,
			fmt.Sprintf("max_steps must be a whole number from 1 to %d, not 1e30: %s", config.DefaultMaxSteps, steps)},
		{"deepseek_agent_start", `{"task":"x","workspace":"/nowhere","timeout_seconds":1e308}`,
			fmt.Sprintf("timeout_seconds must be a number from 1 to %d, not 1e308: %s", secs, timeout)},
		{"deepseek_agent_poll", `{"job_id":"j-1","wait_seconds":1e308}`,
			"wait_seconds must be a number from 0 to 40, not 1e308: how long to wait for the job to settle, 0 to 40 seconds (default 20)"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			// Raw arguments: the SDK sends the numbers as written here.
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || textOf(res) != tt.want {
				t.Fatalf("IsError %v, text:\n%q\nwant:\n%q", res.IsError, textOf(res), tt.want)
			}
		})
	}
	if n := len(d.Requests()); n != 0 {
		t.Fatalf("refused calls reached DeepSeek %d times", n)
	}

	d.Script(deepseektest.Text("reviewed"))
	res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "review", "mode": "review", "files": "func witness() {}"}))
	if err != nil || res.IsError {
		t.Fatalf("a right call: %v %+v", err, res)
	}
	reqs := d.Requests()
	if len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte("func witness() {}")) {
		t.Fatalf("DeepSeek did not get the files: %d requests", len(reqs))
	}
}

// sseMessages splits an SSE (or plain JSON) answer into its JSON-RPC messages,
// each kept as the bytes the bridge wrote.
func sseMessages(t testing.TB, r rawResp) []json.RawMessage {
	t.Helper()
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		return []json.RawMessage{r.body}
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, json.RawMessage(data))
		}
	}
	return out
}

// TestFaultIDsExact: raw JSON-RPC over HTTP. A request id of 2^53+1 (and a
// progress token past 2^53) comes back with the same digits, on a tools/call
// answered as SSE and a tools/list answered as JSON; valid JSON nested 10,000
// deep is refused as nested too deeply.
func TestFaultIDsExact(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	hdr := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
	d.Script(deepseektest.Text("exact"))
	call := `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x"},"_meta":{"progressToken":9007199254740995}}}`
	r := rawDo(t, "POST", b.URL(), []byte(call), hdr)
	msgs := sseMessages(t, r)
	if r.status != http.StatusOK || len(msgs) < 2 {
		t.Fatalf("tools/call: %d %s", r.status, r.body)
	}
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"params"`
	}
	for i, raw := range msgs {
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("message %s: %v", raw, err)
		}
		switch last := i == len(msgs)-1; {
		case last && string(m.ID) != "9007199254740993":
			t.Errorf("the answer's id is %s, the request's 9007199254740993", m.ID)
		case !last && m.Method == "notifications/progress" && string(m.Params.Token) != "9007199254740995":
			t.Errorf("a progress notification's token is %s, the request's 9007199254740995", m.Params.Token)
		}
	}

	r = rawDo(t, "POST", b.URL(), []byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list","params":{}}`), hdr)
	if !bytes.HasPrefix(r.body, []byte(`{"jsonrpc":"2.0","id":9007199254740993,`)) {
		t.Errorf("tools/list: %d %.200s", r.status, r.body)
	}

	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x","files":` + deep + `}}}`
	r = rawDo(t, "POST", b.URL(), []byte(body), hdr)
	var e struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	want := fmt.Sprintf("request body is nested too deeply: arrays and objects may nest at most %d levels here", server.MaxJSONDepth)
	if err := json.Unmarshal(r.body, &e); err != nil || r.status != http.StatusBadRequest || string(e.ID) != "null" || e.Error.Code != -32700 || e.Error.Message != want {
		t.Errorf("10,000 levels: %d %s", r.status, r.body)
	}
}

// TestFaultSIGTERMAnswersFlash: a deepseek_flash call still waiting on
// DeepSeek when the daemon gets SIGTERM is answered — an error result saying
// the bridge is shutting down — once the grace period is over, before its
// stream closes; the daemon then exits 0.
func TestFaultSIGTERMAnswersFlash(t *testing.T) {
	t.Parallel()
	_, o := flashAtSIGTERM(t, time.Hour, "too late")
	// 8s: the 10 s shutdown deadline less the part kept for writing answers.
	want := "the bridge is shutting down: this call was still running 8s after the bridge was asked to stop, " +
		"so it was stopped before it finished. Call the tool again once the bridge is running again."
	if o.err != nil || !o.res.IsError || textOf(o.res) != want {
		t.Fatalf("in-flight call: err %v, result %+v; want the error result %q", o.err, o.res, want)
	}
	if took := o.at.Sub(o.stopped); took > server.DefaultShutdownTimeout {
		t.Errorf("answered %v after SIGTERM, past the %v shutdown deadline (bridgectl stop's SIGKILL)", took, server.DefaultShutdownTimeout)
	}
}

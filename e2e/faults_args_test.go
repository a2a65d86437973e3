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
		{"deepseek_flash", `{"task":12345}`, "task must be a string, not a number: what DeepSeek should do, self-contained: it sees nothing of this conversation; give task or messages"},
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

// TestArgsRefusedByEveryTool: each tool of a real `bridge serve` refuses an
// argument its schema does not name, an argument of the wrong type and an
// integer past 2^53, with a text that names the argument; none of them reaches
// DeepSeek or starts a job.
func TestArgsRefusedByEveryTool(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	argsRefusedByEveryTool(t, d, goSDKClient(t, b.URL()))
}

// TestArgsRefusedByEveryToolOverStdio: the same refusals, word for word, for
// a host that launches `bridge stdio` (which starts the daemon and forwards
// to its unix socket).
func TestArgsRefusedByEveryToolOverStdio(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	envFile, _, _ := writeStdioEnv(t, d, nil)
	argsRefusedByEveryTool(t, d, stdioClient(t, envFile))
}

// argsRefusedByEveryTool calls every tool through cs with an unknown, a
// mistyped and an oversized argument, and checks each refusal's text, that
// none reached DeepSeek (d) and that no job was started.
func argsRefusedByEveryTool(t *testing.T, d *deepseektest.Server, cs *mcp.ClientSession) {
	const big = "9007199254740993" // 2^53 + 1
	jobTakes := "max_steps, model, policy, task, thinking, timeout_seconds"
	steps := func(of string) string {
		return fmt.Sprintf("max_steps must be a whole number from 1 to %d, not %s: tool-call ceiling for this %s (at most %d, the default)",
			config.DefaultMaxSteps, big, of, config.DefaultMaxSteps)
	}
	jobIDDesc := "the job_id deepseek_agent_start returned"
	tests := []struct {
		tool, unknown, mistyped, mistypedWant, oversized, oversizedWant string
		takes                                                           string
	}{
		{"deepseek_flash", `{"task":"x","bogus":1}`, `{"task":["x"]}`,
			"task must be a string, not an array: what DeepSeek should do, self-contained: it sees nothing of this conversation; give task or messages",
			`{"task":"x","files":` + big + `}`, "files must be a string, not a number: inline material the task is about, pasted as text (file contents, diffs, logs); optional",
			"files, messages, mode, model, response_format, task, thinking"},
		{"deepseek_models", `{"bogus":1}`, `{"model":"deepseek-flash"}`, `unknown argument "model": this tool takes no arguments`,
			`{"limit":` + big + `}`, `unknown argument "limit": this tool takes no arguments`,
			"no arguments"},
		{"deepseek_agent_start", `{"task":"x","workspace":"/nowhere","bogus":1}`, `{"task":"x","workspace":"/nowhere","max_steps":"5"}`,
			fmt.Sprintf("max_steps must be a whole number, not a string: tool-call ceiling for this job (at most %d, the default)", config.DefaultMaxSteps),
			`{"task":"x","workspace":"/nowhere","max_steps":` + big + `}`, steps("job"),
			"acceptance, context, max_steps, mode, model, policy, task, thinking, timeout_seconds, workspace"},
		{"deepseek_agent_poll", `{"job_id":"j-1","bogus":1}`, `{"job_id":"j-1","wait_seconds":"5"}`,
			"wait_seconds must be a number, not a string: how long to wait for the job to settle, 0 to 40 seconds (default 20)",
			`{"job_id":"j-1","wait_seconds":` + big + `}`, "wait_seconds must be a number from 0 to 40, not " + big + ": how long to wait for the job to settle, 0 to 40 seconds (default 20)",
			"job_id, wait_seconds"},
		{"deepseek_agent_cancel", `{"job_id":"j-1","bogus":1}`, `{"job_id":{"id":"j-1"}}`, "job_id must be a string, not an object: " + jobIDDesc,
			`{"job_id":` + big + `}`, "job_id must be a string, not a number: " + jobIDDesc,
			"job_id"},
		{"deepseek_agent_list", `{"bogus":1}`, `{"limit":"5"}`, "limit must be a whole number, not a string: at most this many jobs, 1 to 100 (default 20)",
			`{"limit":` + big + `}`, "limit must be a whole number from 1 to 100, not " + big + ": at most this many jobs, 1 to 100 (default 20)",
			"limit, status"},
		{"deepseek_agent_message", `{"job_id":"j-1","message":"m","bogus":1}`, `{"job_id":"j-1","message":true}`,
			"message must be a string, not a boolean: what the agent should do or know, self-contained",
			`{"job_id":"j-1","message":` + big + `}`, "message must be a string, not a number: what the agent should do or know, self-contained",
			"job_id, message, mode"},
		{"deepseek_review", `{"workspace":"/nowhere","bogus":1}`, `{"workspace":"/nowhere","include_project_instructions":"yes"}`,
			"include_project_instructions must be true or false, not a string: hand the reviewer the workspace's CLAUDE.md and AGENTS.md (default false)",
			`{"workspace":"/nowhere","focus":` + big + `}`, "focus must be a string, not a number: what to look at hardest, e.g. security, performance, error handling",
			"focus, include_project_instructions, instructions, max_steps, model, scope, thinking, timeout_seconds, workspace"},
		{"deepseek_agent_continue", `{"job_id":"j-1","task":"go on","bogus":1}`, `{"job_id":"j-1","task":"go on","timeout_seconds":"60"}`,
			fmt.Sprintf("timeout_seconds must be a number, not a string: wall-clock ceiling for this leg in seconds (at most %d, the default)", int(config.DefaultJobTimeout/time.Second)),
			`{"job_id":"j-1","task":"go on","max_steps":` + big + `}`, steps("leg"),
			"job_id, " + jobTakes},
	}
	for _, tt := range tests {
		for _, c := range []struct{ kind, args, want string }{
			{"unknown", tt.unknown, `unknown argument "bogus": this tool takes ` + tt.takes},
			{"mistyped", tt.mistyped, tt.mistypedWant},
			{"oversized", tt.oversized, tt.oversizedWant},
		} {
			t.Run(tt.tool+" "+c.kind, func(t *testing.T) {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(c.args)})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || textOf(res) != c.want {
					t.Fatalf("%s: IsError %v, text:\n%q\nwant:\n%q", c.args, res.IsError, textOf(res), c.want)
				}
			})
		}
	}
	if n := len(d.Requests()); n != 0 {
		t.Errorf("refused calls reached DeepSeek %d times", n)
	}
	res, err := cs.CallTool(t.Context(), toolCall("deepseek_agent_list", map[string]any{}))
	var list struct {
		Total int `json:"total"`
	}
	if err == nil && !res.IsError {
		structured(t, res, &list)
	}
	if err != nil || res.IsError || list.Total != 0 {
		t.Errorf("after the refusals: %v %+v, %d jobs", err, res, list.Total)
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

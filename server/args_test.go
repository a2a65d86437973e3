package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// rawCall is a tools/call body with the arguments exactly as written.
func rawCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// Descriptions the refusals end with (the schema's own words).
const (
	descFlashTask = "what DeepSeek should do, self-contained: it sees nothing of this conversation"
	descFiles     = "inline material the task is about, pasted as text (file contents, diffs, logs); optional"
	descMode      = "analyze | review | code | summarize (default analyze)"
	descAgentTask = "what the agent should do, self-contained: it sees only this text and the workspace"
	descWorkspace = "absolute path of an existing directory inside the owner's allowed roots (DEEPSEEK_ALLOWED_ROOTS)"
	descJobID     = "the job_id deepseek_agent_start returned"
	descWait      = "how long to wait for the job to settle, 0 to 40 seconds (default 20)"
)

// TestArgsRefused: every tool refuses a wrong type, a number out of range and
// a missing argument over the wire, naming the argument and what it needs —
// and neither DeepSeek nor the job registry is reached.
func TestArgsRefused(t *testing.T) {
	var flashCalls atomic.Int32
	flash := &fakeFlash{fn: func(context.Context, deepseek.FlashRequest) (deepseek.FlashResult, error) {
		flashCalls.Add(1)
		return deepseek.FlashResult{Answer: "should not be asked"}, nil
	}}
	f := &fakeJobs{startSnap: snap(jobs.StatusRunning), waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
	env := newTestEnv(t, Options{Flash: flash, Jobs: f})
	cfg := env.srv.o.Config
	descSteps := fmt.Sprintf("tool-call ceiling for this job (at most %d, the default)", cfg.MaxSteps)
	jobSecs := int(cfg.JobTimeout / time.Second)
	descTimeout := fmt.Sprintf("wall-clock ceiling for this job in seconds (at most %d, the default)", jobSecs)
	steps := fmt.Sprintf("max_steps must be a whole number from 1 to %d, not ", cfg.MaxSteps)
	timeout := fmt.Sprintf("timeout_seconds must be a number from 1 to %d, not ", jobSecs)
	ws := `"workspace":"/ws"`
	tests := []struct {
		name, tool, args, want string
	}{
		{"files as an array", "deepseek_flash", `{"task":"x","files":["a.go","b.go"]}`, "files must be a string, not an array: " + descFiles},
		{"files as an object", "deepseek_flash", `{"task":"x","files":{"a.go":"package a"}}`, "files must be a string, not an object: " + descFiles},
		{"mode as a number", "deepseek_flash", `{"task":"x","mode":2}`, "mode must be a string, not a number: " + descMode},
		{"mode outside its enum", "deepseek_flash", `{"task":"x","mode":"poem"}`, `mode must be one of analyze, review, code, summarize, not "poem"`},
		{"task as a number", "deepseek_flash", `{"task":42}`, "task must be a string, not a number: " + descFlashTask},
		{"task as a boolean", "deepseek_flash", `{"task":true}`, "task must be a string, not a boolean: " + descFlashTask},
		{"task null", "deepseek_flash", `{"task":null}`, "task is required: " + descFlashTask},
		{"task blank", "deepseek_flash", `{"task":" \n "}`, "task is required: " + descFlashTask},
		{"no arguments", "deepseek_flash", `{}`, "task is required: " + descFlashTask},
		{"arguments an array", "deepseek_flash", `["x"]`, "the arguments must be an object of named arguments, not an array"},
		{"arguments a string", "deepseek_flash", `"x"`, "the arguments must be an object of named arguments, not a string"},
		{"every wrong one at once", "deepseek_flash", `{"files":[],"mode":7}`,
			"files must be a string, not an array: " + descFiles + "; mode must be a string, not a number: " + descMode + "; task is required: " + descFlashTask},

		{"max_steps 1e30", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":1e30}`, steps + "1e30: " + descSteps},
		{"max_steps 0", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":0}`, steps + "0: " + descSteps},
		{"max_steps negative", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":-5}`, steps + "-5: " + descSteps},
		{"max_steps fractional", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":2.5}`, steps + "2.5: " + descSteps},
		{"max_steps past float64", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":9007199254740993}`, steps + "9007199254740993: " + descSteps},
		{"max_steps as a string", "deepseek_agent_start", `{"task":"x",` + ws + `,"max_steps":"5"}`, "max_steps must be a whole number, not a string: " + descSteps},
		{"timeout_seconds 1e308", "deepseek_agent_start", `{"task":"x",` + ws + `,"timeout_seconds":1e308}`, timeout + "1e308: " + descTimeout},
		{"timeout_seconds 0.5", "deepseek_agent_start", `{"task":"x",` + ws + `,"timeout_seconds":0.5}`, timeout + "0.5: " + descTimeout},
		{"a long number is cut short", "deepseek_agent_start", `{"task":"x",` + ws + `,"timeout_seconds":` + strings.Repeat("9", 60) + `}`,
			timeout + strings.Repeat("9", 40) + "…: " + descTimeout},
		{"workspace as an object", "deepseek_agent_start", `{"task":"x","workspace":{"path":"/ws"}}`, "workspace must be a string, not an object: " + descWorkspace},
		{"agent task as a number", "deepseek_agent_start", `{"task":1,` + ws + `}`, "task must be a string, not a number: " + descAgentTask},
		{"workspace missing", "deepseek_agent_start", `{"task":"x"}`, "workspace is required: " + descWorkspace},

		{"wait_seconds 1e308", "deepseek_agent_poll", `{"job_id":"` + jobID + `","wait_seconds":1e308}`, "wait_seconds must be a number from 0 to 40, not 1e308: " + descWait},
		{"wait_seconds 41", "deepseek_agent_poll", `{"job_id":"` + jobID + `","wait_seconds":41}`, "wait_seconds must be a number from 0 to 40, not 41: " + descWait},
		{"wait_seconds negative", "deepseek_agent_poll", `{"job_id":"` + jobID + `","wait_seconds":-3}`, "wait_seconds must be a number from 0 to 40, not -3: " + descWait},
		{"wait_seconds as a string", "deepseek_agent_poll", `{"job_id":"` + jobID + `","wait_seconds":"10"}`, "wait_seconds must be a number, not a string: " + descWait},
		{"job_id as a number", "deepseek_agent_poll", `{"job_id":7}`, "job_id must be a string, not a number: " + descJobID},
		{"cancel job_id as an array", "deepseek_agent_cancel", `{"job_id":["` + jobID + `"]}`, "job_id must be a string, not an array: " + descJobID},
		{"cancel without job_id", "deepseek_agent_cancel", `{}`, "job_id is required: " + descJobID},

		{"an unknown argument", "deepseek_flash", `{"task":"x","modle":"deepseek-v4-pro"}`, `unknown argument "modle": this tool takes files, mode, model, task, thinking`},
		{"unknown arguments of start", "deepseek_agent_start", `{"task":"x",` + ws + `,"tools":["Read"],"model_id":"x"}`,
			`unknown argument "model_id", "tools": this tool takes max_steps, model, policy, task, thinking, timeout_seconds, workspace`},
		{"an unknown policy field", "deepseek_agent_start", `{"task":"x",` + ws + `,"policy":{"tool":["Read"]}}`,
			`unknown argument "tool": policy takes append_system_prompt, commands, deny_paths, max_cost_usd, max_steps, network, on_other_commands, timeout_seconds, tools, write_paths`},
		{"a policy tool outside the list", "deepseek_agent_start", `{"task":"x",` + ws + `,"policy":{"tools":["Read","Sudo"]}}`,
			`policy.tools[1] must be one of Bash, Edit, Glob, Grep, Monitor, NotebookEdit, Read, Task, TaskStop, ToolSearch, WebFetch, WebSearch, Write, not "Sudo"`},
		{"an unknown poll argument", "deepseek_agent_poll", `{"job_id":"` + jobID + `","wait":5}`, `unknown argument "wait": this tool takes job_id, wait_seconds`},
		{"an unknown model", "deepseek_flash", `{"task":"x","model":"gpt-5"}`, `unknown model "gpt-5"; known models: deepseek-flash, deepseek-v4-flash, deepseek-v4-pro (see deepseek_models)`},
		{"an unknown model for a job", "deepseek_agent_start", `{"task":"x",` + ws + `,"model":"gpt-5"}`,
			`The job was not started. invalid job request: unknown model "gpt-5"; known models: deepseek-flash, deepseek-v4-flash, deepseek-v4-pro (see deepseek_models)`},
		{"a thinking level outside the list", "deepseek_flash", `{"task":"x","thinking":"medium"}`, `thinking must be one of off, low, high, max, not "medium"`},
		{"a broad write path", "deepseek_agent_start", `{"task":"x",` + ws + `,"policy":{"write_paths":["**"]}}`,
			`The job was not started. invalid job request: policy: write_paths: "**" names the whole workspace: leave write_paths out for that, or name a folder ("out/**")`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := finalResult(t, messages(t, post(t, env.url, rawCall(i+1, tt.tool, tt.args), mcpHeaders)))
			if !res.IsError || res.text() != tt.want {
				t.Fatalf("IsError=%v text:\n%q\nwant:\n%q", res.IsError, res.text(), tt.want)
			}
		})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := flashCalls.Load(); n != 0 || len(f.gotStart) != 0 || len(f.gotWait) != 0 || len(f.cancelled) != 0 {
		t.Errorf("refused calls reached the handlers: flash %d, start %d, wait %d, cancel %d", n, len(f.gotStart), len(f.gotWait), len(f.cancelled))
	}
}

// TestArgsPassedAsSent: what passes the check reaches DeepSeek and the
// registry unchanged; absent arguments take the schema's default.
func TestArgsPassedAsSent(t *testing.T) {
	var got deepseek.FlashRequest
	flash := &fakeFlash{fn: func(_ context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		got = req
		return deepseek.FlashResult{Answer: "ok", Model: "m", FinishReason: "stop"}, nil
	}}
	f := &fakeJobs{startSnap: snap(jobs.StatusRunning), waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
	env := newTestEnv(t, Options{Flash: flash, Jobs: f})

	flashTests := []struct {
		args string
		want deepseek.FlashRequest
	}{
		{`{"task":" review this ","mode":"review","files":"diff --git a/x b/x"}`, deepseek.FlashRequest{Task: "review this", Mode: deepseek.ModeReview, Files: "diff --git a/x b/x"}},
		{`{"task":"x"}`, deepseek.FlashRequest{Task: "x", Mode: deepseek.ModeAnalyze}},
		{`{"task":"x","mode":"","files":null}`, deepseek.FlashRequest{Task: "x", Mode: deepseek.ModeAnalyze}},
		{`{"task":"x","model":"deepseek-v4-pro","thinking":"off"}`, deepseek.FlashRequest{Task: "x", Mode: deepseek.ModeAnalyze, Model: "deepseek-v4-pro", Thinking: "off"}},
	}
	for i, tt := range flashTests {
		res := finalResult(t, messages(t, post(t, env.url, rawCall(i+1, "deepseek_flash", tt.args), mcpHeaders)))
		if tt.want.Model == "" {
			tt.want.Model = deepseek.DefaultModel
		}
		if res.IsError || got.Task != tt.want.Task || got.Mode != tt.want.Mode || got.Files != tt.want.Files || got.Model != tt.want.Model || got.Thinking != tt.want.Thinking {
			t.Errorf("%s: IsError=%v, DeepSeek got %+v", tt.args, res.IsError, got)
		}
	}

	res := finalResult(t, messages(t, post(t, env.url, rawCall(10, "deepseek_agent_start", `{"task":"t","workspace":"/ws","max_steps":7,"timeout_seconds":90.5}`), mcpHeaders)))
	f.mu.Lock()
	start := f.gotStart[len(f.gotStart)-1]
	f.mu.Unlock()
	if res.IsError || start.Task != "t" || start.Workspace != "/ws" || start.MaxSteps != 7 || start.Timeout != 90500*time.Millisecond {
		t.Errorf("start: IsError=%v, registry got %+v", res.IsError, start)
	}
	res = finalResult(t, messages(t, post(t, env.url, rawCall(11, "deepseek_agent_start", `{"task":"t","workspace":"/ws"}`), mcpHeaders)))
	f.mu.Lock()
	start = f.gotStart[len(f.gotStart)-1]
	f.mu.Unlock()
	if res.IsError || start.MaxSteps != 0 || start.Timeout != 0 {
		t.Errorf("start without ceilings: IsError=%v, registry got %+v (0 = the configured ceilings)", res.IsError, start)
	}
}

// TestArgSchemaCompiles: a schema keyword the check does not read makes the
// tool fail at construction, not pass unchecked at call time; nested objects
// and arrays are checked by their own schemas.
func TestArgSchemaCompiles(t *testing.T) {
	for _, bad := range []string{
		`{"type":"object","properties":{"name":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","properties":{"n":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"n":{"type":"number","enum":[1,2]}}}`,
		`{"type":"object","required":["ghost"],"properties":{}}`,
		`{"type":"object","properties":{"n":{"type":"string","minimum":1}}}`,
		`{"type":"object","properties":{"n":{"type":"array","items":{"type":"string","maxLength":3}}}}`,
		`{"type":"string"}`,
		`{"type":"object","properties":{"n":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":false,"properties":{"o":{"type":"object","properties":{}}}}`,
	} {
		tool := mcp.NewToolWithRawSchema("t", "", json.RawMessage(bad))
		if _, err := toolArgSchema(tool); err == nil {
			t.Errorf("%s compiled", bad)
		}
	}
	tool := mcp.NewToolWithRawSchema("t", "", json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{
		"policy":{"type":"object","additionalProperties":false,"required":["allow"],"properties":{"allow":{"type":"array","items":{"type":"string"}},"strict":{"type":"boolean","default":true}}},
		"thinking":{"type":"boolean"}}}`))
	s, err := toolArgSchema(tool)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, want string }{
		{`{"policy":{"allow":["ls",3]},"thinking":"yes"}`, "policy.allow[1] must be a string, not a number; thinking must be true or false, not a string"},
		{`{"policy":{}}`, "policy.allow is required"},
		{`{"policy":[]}`, "policy must be an object, not an array"},
	}
	for _, tt := range tests {
		_, err := checkArgs(s, json.RawMessage(tt.args))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.args, err, tt.want)
		}
	}
	a, err := checkArgs(s, json.RawMessage(`{"thinking":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := a.Bool("thinking"); v || !ok {
		t.Errorf("thinking = %v, %v; want false as sent", v, ok)
	}
	if _, ok := a.Bool("policy"); ok {
		t.Error("an absent argument without a default reads as set")
	}
}

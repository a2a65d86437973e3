package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// rawCall is a tools/call body with the arguments exactly as written.
func rawCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// jobID is a job id of the right shape; no registry knows it.
const jobID = "0123456789abcdef0123456789abcdef"

// Descriptions the refusals end with (the schema's own words).
const (
	descFlashTask = "what DeepSeek should do, self-contained: it sees nothing of this conversation; give task or messages"
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
	f := &stubJobs{}
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
		{"task null", "deepseek_flash", `{"task":null}`, "task must be a string, not null: " + descFlashTask},
		{"null and an empty choice", "deepseek_flash", `{"task":"x","mode":"","files":null}`,
			"files must be a string, not null: " + descFiles + `; mode must be one of analyze, review, code, summarize, not ""`},
		{"no arguments", "deepseek_flash", `{}`, "the task is empty: say what DeepSeek should do (or give messages, a conversation ending with the user's turn)"},
		{"arguments an array", "deepseek_flash", `["x"]`, "the arguments must be an object of named arguments, not an array"},
		{"arguments a string", "deepseek_flash", `"x"`, "the arguments must be an object of named arguments, not a string"},
		{"every wrong one at once", "deepseek_flash", `{"files":[],"mode":7}`,
			"files must be a string, not an array: " + descFiles + "; mode must be a string, not a number: " + descMode},

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
		{"poll without job_id", "deepseek_agent_poll", `{}`, "job_id is required: " + descJobID},
		{"start without task", "deepseek_agent_start", `{` + ws + `}`, "task is required: " + descAgentTask},
		{"a status the list does not know", "deepseek_agent_list", `{"status":"finished"}`,
			`status must be one of queued, running, waiting_approval, done, done_unverified, error, cancelled, interrupted, not "finished"`},
		{"list limit 0", "deepseek_agent_list", `{"limit":0}`, "limit must be a whole number from 1 to 100, not 0: at most this many jobs, 1 to 100 (default 20)"},
		{"message mode outside its enum", "deepseek_agent_message", `{"job_id":"` + jobID + `","message":"m","mode":"now"}`, `mode must be one of follow_up, steer, not "now"`},

		{"an unknown argument", "deepseek_flash", `{"task":"x","modle":"deepseek-v4-pro"}`, `unknown argument "modle": this tool takes files, messages, mode, model, response_format, task, thinking`},
		{"unknown arguments of start", "deepseek_agent_start", `{"task":"x",` + ws + `,"tools":["Read"],"model_id":"x"}`,
			`unknown argument "model_id", "tools": this tool takes acceptance, context, max_steps, mode, model, policy, task, thinking, timeout_seconds, workspace`},
		{"an unknown policy field", "deepseek_agent_start", `{"task":"x",` + ws + `,"policy":{"tool":["Read"]}}`,
			`unknown argument "tool": policy takes append_system_prompt, commands, deny_paths, land, max_cost_usd, max_steps, network, on_other_commands, timeout_seconds, tools, write_paths`},
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
	if n, m := flashCalls.Load(), f.reached(); n != 0 || m != 0 {
		t.Errorf("refused calls reached DeepSeek %d times and the registry %d times", n, m)
	}
}

// TestArgsPassedAsSent: what passes the check reaches DeepSeek and the
// registry unchanged; absent arguments take their defaults.
func TestArgsPassedAsSent(t *testing.T) {
	var got deepseek.FlashRequest
	flash := &fakeFlash{fn: func(_ context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		got = req
		return deepseek.FlashResult{Answer: "ok", Model: "m", FinishReason: "stop"}, nil
	}}
	f := &stubJobs{}
	env := newTestEnv(t, Options{Flash: flash, Jobs: f})

	flashTests := []struct {
		args string
		want deepseek.FlashRequest
	}{
		{`{"task":" review this ","mode":"review","files":"diff --git a/x b/x"}`, deepseek.FlashRequest{Task: "review this", Mode: deepseek.ModeReview, Files: "diff --git a/x b/x"}},
		{`{"task":"x"}`, deepseek.FlashRequest{Task: "x", Mode: deepseek.ModeAnalyze}},
		{`{"task":"x","files":""}`, deepseek.FlashRequest{Task: "x", Mode: deepseek.ModeAnalyze}},
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
	start := f.starts[len(f.starts)-1]
	f.mu.Unlock()
	if res.IsError || start.Task != "t" || start.Workspace != "/ws" || start.MaxSteps != 7 || start.Timeout != 90500*time.Millisecond {
		t.Errorf("start: IsError=%v, registry got %+v", res.IsError, start)
	}
	res = finalResult(t, messages(t, post(t, env.url, rawCall(11, "deepseek_agent_start", `{"task":"t","workspace":"/ws"}`), mcpHeaders)))
	f.mu.Lock()
	start = f.starts[len(f.starts)-1]
	f.mu.Unlock()
	if res.IsError || start.MaxSteps != 0 || start.Timeout != 0 {
		t.Errorf("start without ceilings: IsError=%v, registry got %+v (0 = the configured ceilings)", res.IsError, start)
	}
	// The TypeScript bridge's mode is accepted and changes nothing; the
	// context and the checks reach the registry as sent.
	res = finalResult(t, messages(t, post(t, env.url, rawCall(12, "deepseek_agent_start",
		`{"task":"t","workspace":"/ws","mode":"agent","context":"c","acceptance":[{"check":"tests pass","command":"make test"},{"check":"reads well"}]}`), mcpHeaders)))
	f.mu.Lock()
	start = f.starts[len(f.starts)-1]
	f.mu.Unlock()
	if res.IsError || start.Context != "c" || len(start.Acceptance) != 2 || start.Acceptance[0].Command != "make test" || start.Acceptance[1].Command != "" {
		t.Errorf("start with mode, context and acceptance: IsError=%v %s, registry got %+v", res.IsError, res.text(), start)
	}
}

// allTools are the tools a daemon with a full job registry serves.
var allTools = []string{"deepseek_flash", "deepseek_models", "deepseek_agent_start", "deepseek_agent_poll",
	"deepseek_agent_cancel", "deepseek_agent_continue", "deepseek_agent_message", "deepseek_agent_list", "deepseek_agent_fetch", "deepseek_review"}

// TestUnknownArgumentRefusedByEveryTool: every tool refuses an argument its
// schema does not name, naming it and every argument the tool takes.
func TestUnknownArgumentRefusedByEveryTool(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	registered := env.srv.mcp.ListTools()
	for i, name := range allTools {
		t.Run(name, func(t *testing.T) {
			st := registered[name]
			if st == nil {
				t.Fatalf("%s is not served", name)
			}
			var in struct { // the schema as registered: raw JSON (rawInputSchemas)
				Required   []string                           `json:"required"`
				Properties map[string]struct{ Enum []string } `json:"properties"`
			}
			if err := json.Unmarshal(st.Tool.RawInputSchema, &in); err != nil {
				t.Fatalf("%s: registered input schema %q: %v", name, st.Tool.RawInputSchema, err)
			}
			args := map[string]any{"bogus": 9007199254740993}
			for _, r := range in.Required {
				args[r] = "x"
				if enum := in.Properties[r].Enum; len(enum) > 0 {
					args[r] = enum[0]
				}
			}
			takes := strings.Join(slices.Sorted(maps.Keys(in.Properties)), ", ")
			if takes == "" {
				takes = "no arguments"
			}
			res := finalResult(t, messages(t, post(t, env.url, callBody(i+1, name, args, nil), mcpHeaders)))
			if want := `unknown argument "bogus": this tool takes ` + takes; !res.IsError || res.text() != want {
				t.Fatalf("IsError=%v text %q, want %q", res.IsError, res.text(), want)
			}
		})
	}
}

// TestToolSchemasCompile: every tool's input and output schema compiles with
// the compiler mcp-go uses — mcp-go would skip one that does not and let its
// calls through unchecked — and every tool declares an output schema.
func TestToolSchemasCompile(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	registered := env.srv.mcp.ListTools()
	schemas, err := checkToolSchemas(registered)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range allTools {
		if _, ok := schemas[name]; !ok {
			t.Errorf("%s: no input schema checked", name)
		}
		if _, ok := outputSchemaJSON(registered[name].Tool); !ok {
			t.Errorf("%s: no output schema: its structuredContent would go unchecked", name)
		}
	}
}

// mcpGoCall runs one tools/call through a bare mcp-go server and says whether
// the handler ran.
func mcpGoCall(t *testing.T, m *mcpserver.MCPServer, tool mcp.Tool, args string) bool {
	t.Helper()
	var ran atomic.Bool
	m.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Store(true)
		return mcp.NewToolResultText("ran"), nil
	})
	m.HandleMessage(t.Context(), []byte(rawCall(1, tool.Name, args)))
	return ran.Load()
}

// TestSchemaGapsOfMCPGoAreClosed: mcp-go checks nothing against a schema
// that does not compile, and its strict default leaves a raw schema (and
// every nested object) open to unknown names. New refuses both.
func TestSchemaGapsOfMCPGoAreClosed(t *testing.T) {
	tests := []struct {
		name, schema, args string
		mcpGoRuns          bool // mcp-go with validation and the strict default runs the handler anyway
		want               string
	}{
		{"input schema does not compile", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integr"}}}`, `{"n":"x","extra":1}`, true, "tool t: input schema: compile: "},
		{"raw schema without additionalProperties", `{"type":"object","properties":{"n":{"type":"string"}}}`, `{"n":"x","extra":1}`, true,
			"tool t: input schema: the arguments: an object schema must say additionalProperties: false"},
		{"nested object", `{"type":"object","additionalProperties":false,"properties":{"o":{"type":"object","properties":{}}}}`, `{"o":{"extra":1}}`, true,
			"tool t: input schema: o: an object schema must say additionalProperties: false"},
		{"object in an array", `{"type":"object","additionalProperties":false,"properties":{"l":{"type":"array","items":{"type":"object"}}}}`, `{"l":[{"extra":1}]}`, true,
			"tool t: input schema: l[]: an object schema must say additionalProperties: false"},
		{"object behind a $ref", `{"type":"object","additionalProperties":false,"$defs":{"a":{"type":"object"}},"properties":{"a":{"$ref":"#/$defs/a"}}}`, `{"a":{"extra":1}}`, true,
			"tool t: input schema: a: an object schema must say additionalProperties: false"},
		{"strict raw schema", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"string"}}}`, `{"n":"x","extra":1}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := mcp.NewToolWithRawSchema("t", "", json.RawMessage(tt.schema))
			m := mcpserver.NewMCPServer("t", "1", mcpserver.WithInputSchemaValidation(), mcpserver.WithStrictInputSchemaDefault())
			if ran := mcpGoCall(t, m, tool, tt.args); ran != tt.mcpGoRuns {
				t.Errorf("mcp-go ran the handler: %v, want %v (mcp-go changed: revisit argcheck.go)", ran, tt.mcpGoRuns)
			}
			_, err := checkToolSchemas(m.ListTools())
			if (err == nil) != (tt.want == "") || err != nil && !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("checkToolSchemas: %v, want %q", err, tt.want)
			}
		})
	}

	t.Run("output schema does not compile", func(t *testing.T) {
		tool := mcp.NewTool("t", mcp.WithSchemaAdditionalProperties(false))
		tool.RawOutputSchema = json.RawMessage(`{"type":"objekt"}`)
		_, err := checkToolSchemas(map[string]*mcpserver.ServerTool{"t": {Tool: tool}})
		if err == nil || !strings.HasPrefix(err.Error(), "tool t: output schema: compile: ") {
			t.Fatalf("checkToolSchemas: %v", err)
		}
	})
	t.Run("no input schema", func(t *testing.T) {
		_, err := checkToolSchemas(map[string]*mcpserver.ServerTool{"t": {Tool: mcp.Tool{Name: "t"}}})
		if err == nil || err.Error() != "tool t: no input schema: mcp-go would not check its arguments" {
			t.Fatalf("checkToolSchemas: %v", err)
		}
	})
}

// TestIntegersAreBounded: every integer argument has a maximum and a
// minimum within ±(2^53-1), so a number past what a float64 holds exactly
// is refused, never rounded.
func TestIntegersAreBounded(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	schemas, err := checkToolSchemas(env.srv.mcp.ListTools())
	if err != nil {
		t.Fatal(err)
	}
	const safe = 1<<53 - 1
	var walk func(tool, at string, s any)
	n := 0
	walk = func(tool, at string, s any) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		if m["type"] == "integer" {
			n++
			lo, _ := m["minimum"].(json.Number)
			hi, _ := m["maximum"].(json.Number)
			l, lerr := lo.Float64()
			h, herr := hi.Float64()
			if lerr != nil || herr != nil || l < -safe || h > safe {
				t.Errorf("%s: %s: integer bounded by %q and %q, want both within ±(2^53-1)", tool, at, lo, hi)
			}
		}
		props, _ := m["properties"].(map[string]any)
		for name, p := range props {
			walk(tool, join(at, name), p)
		}
		walk(tool, at+"[]", m["items"])
	}
	for name, s := range schemas {
		walk(name, "", s.raw)
	}
	if n < 4 { // max_steps of start and continue, their policy's, limit
		t.Errorf("%d integer arguments found, want at least 4", n)
	}
}

// TestOnlyTheJobToolsRunAsTasks: mcp-go routes a task-augmented call before
// it checks the arguments, so only the tools whose task path the bridge
// checks (taskCalls, TestATaskCallsArgumentsAreChecked) declare task
// support; a call of any other tool that asks for a task runs as a plain
// call and is checked like one.
func TestOnlyTheJobToolsRunAsTasks(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	var tasks []string
	for name, st := range env.srv.mcp.ListTools() {
		if st.Tool.Execution != nil && st.Tool.Execution.TaskSupport != "" {
			tasks = append(tasks, name+"="+string(st.Tool.Execution.TaskSupport))
		}
	}
	slices.Sort(tasks)
	if want := []string{"deepseek_agent_continue=optional", "deepseek_agent_start=optional", "deepseek_review=optional"}; !slices.Equal(tasks, want) {
		t.Errorf("task support %v, want %v", tasks, want)
	}
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"x","modle":"m"},"task":{"ttl":60000}}}`
	res := finalResult(t, messages(t, post(t, env.url, body, mcpHeaders)))
	if want := `unknown argument "modle": this tool takes files, messages, mode, model, response_format, task, thinking`; !res.IsError || res.text() != want {
		t.Fatalf("IsError=%v text %q, want %q", res.IsError, res.text(), want)
	}
}

// TestToolsWithoutJobsOfferNoTasks: a server without the job tools (flash
// only) does not offer tasks in initialize.
func TestToolsWithoutJobsOfferNoTasks(t *testing.T) {
	env := newTestEnv(t, Options{})
	r := post(t, env.url, initializeBody(1), nil)
	if msgs := messages(t, r); len(msgs) != 1 || strings.Contains(string(msgs[0].Result), `"tasks"`) {
		t.Errorf("initialize offers tasks: %s", r.body)
	}
}

// TestOutputIsChecked: a structuredContent that does not match the tool's
// output schema never reaches the client; the bridge logs it as its own bug.
func TestOutputIsChecked(t *testing.T) {
	env := newTestEnv(t, Options{})
	type out struct {
		N int `json:"n" jsonschema:"a count"`
	}
	env.srv.mcp.AddTool(mcp.NewTool("wrong_shape", mcp.WithOutputSchema[out]()), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"n": "seven"}, "seven"), nil
	})
	res := finalResult(t, messages(t, post(t, env.url, callBody(1, "wrong_shape", nil, nil), mcpHeaders)))
	if !res.IsError || !strings.HasPrefix(res.text(), mcpGoOutputRefusal) || res.StructuredContent != nil {
		t.Fatalf("IsError=%v text %q structured %s", res.IsError, res.text(), res.StructuredContent)
	}
	if !strings.Contains(env.logs.String(), `"tool":"wrong_shape"`) {
		t.Errorf("not logged: %s", env.logs.String())
	}
}

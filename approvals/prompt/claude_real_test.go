package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// childEnv makes this test binary the approval child that Claude Code spawns.
const childEnv = "BRIDGE_APPROVALS_TEST_CHILD_CONFIG"

// traceEnv, set when running the tests, names a file that receives the
// JSON-RPC lines between Claude Code and the approval child.
const traceEnv = "BRIDGE_APPROVALS_TEST_TRACE"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		cfg, err := LoadChildConfig(path)
		if err == nil {
			var in io.Reader = os.Stdin
			var out io.Writer = os.Stdout
			if trace := os.Getenv(traceEnv); trace != "" {
				// Debugging aid: keep the JSON-RPC traffic of the real harness.
				if f, ferr := os.OpenFile(trace, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); ferr == nil {
					defer f.Close()
					in, out = io.TeeReader(in, f), io.MultiWriter(out, f)
				}
			}
			err = RunChild(context.Background(), cfg, in, out, os.Stderr)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testenv.Main(m))
}

// fakeModel is a minimal Anthropic Messages endpoint on loopback: the first
// main-loop request gets one Bash tool_use with the scripted command, the
// next gets a final text; the tool_result text is handed to the test.
type fakeModel struct {
	tool    string         // "" means Bash
	input   map[string]any // nil means {"command": command}
	command string
	more    []step // further tool calls, one per later main-loop request
	idx     int
	results chan string
	mu      sync.Mutex
	turns   int
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.Contains(r.URL.Path, "count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":1}`)
		return
	}
	var body struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	var result string
	if n := len(body.Messages); n > 0 {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(body.Messages[n-1].Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					result = string(b.Content)
				}
			}
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_test", "type": "message",
		"role": "assistant", "model": "test-model", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	f.mu.Lock()
	main := len(body.Tools) > 0
	var next *step
	id := fmt.Sprintf("toolu_test%d", f.idx+1)
	if main {
		steps := append([]step{{f.tool, f.input}}, f.more...)
		if steps[0].tool == "" {
			steps[0] = step{"Bash", map[string]any{"command": f.command, "description": "scripted"}}
		}
		if f.idx < len(steps) {
			next = &steps[f.idx]
			f.idx++
		}
	}
	f.mu.Unlock()
	if main && result != "" {
		select {
		case f.results <- result:
		default:
		}
	}
	stop := "end_turn"
	if next != nil {
		tool, in := next.tool, next.input
		input, _ := json.Marshal(in)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		stop = "tool_use"
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// TestRealClaudeCode runs the pinned Claude Code binary against a loopback
// double with this package's approval child and sandbox settings, and checks
// what the scripted Bash call's tool_result says.
func TestRealClaudeCode(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the jail is bubblewrap")
	}
	claude := testenv.ClaudeBin(t)
	testenv.Bwrap(t)
	if _, err := sandbox.Available(exec.LookPath); err != nil {
		t.Fatalf("bubblewrap or socat cannot run here: %v (scripts/install.sh apt)", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		command string
		mode    string
		human   func(q *approvals.Queue, pr approvals.PendingRequest) error
		more    []step   // further scripted tool calls
		audit   []string // event:decision:tool lines the audit log must hold
		denyEnv []string // nil: sandbox.DefaultDenyEnv
		tool    string
		input   map[string]any // string values get SECRET, OUTSIDE, STATE, WS replaced
		want    []string
		absent  []string
	}{
		{name: "allowed by the rules runs sandboxed", command: "ls", want: []string{"canary.txt"}},
		{name: "a human deny reaches the model", command: "ls && id",
			human: func(q *approvals.Queue, pr approvals.PendingRequest) error {
				return q.Decide(pr.ID, false, "no chaining today", "test")
			},
			want: []string{"Denied by the owner: no chaining today. Do not try to work around this denial"}},
		{name: "a human approval runs it", command: "ls && echo approved-run",
			human: func(q *approvals.Queue, pr approvals.PendingRequest) error { return q.Decide(pr.ID, true, "", "test") },
			want:  []string{"approved-run"}},
		{name: "protected path denied by the rules", command: "cat STATE/approvals/x",
			want: []string{"Denied by the bridge's approval rules", "protected path"}},
		{name: "approval off: the sandbox still holds", mode: approvals.ModeOff,
			command: "cat SECRET; echo token=[$ANTHROPIC_AUTH_TOKEN]; touch OUTSIDE/written; cat STATE/marker; " +
				`python3 -c "import socket; socket.create_connection(('127.0.0.1', PORT), 3); print('net=open')" || echo net=blocked`,
			want:   []string{"token=[]", "Read-only file system", "net=blocked"},
			absent: []string{"sk-test-double-key", "canary-secret-0123456789abcdef", "state-marker", "net=open"}},
		{name: "Read outside the workspace goes to a human", tool: "Read", input: map[string]any{"file_path": "OUTSIDE/notes.txt"},
			human: func(q *approvals.Queue, pr approvals.PendingRequest) error {
				return q.Decide(pr.ID, false, "not that file", "test")
			},
			want: []string{"Denied by the owner: not that file."}},
		{name: "WebFetch goes to a human", tool: "WebFetch", input: map[string]any{"url": "https://example.com/", "prompt": "summarise"},
			human: func(q *approvals.Queue, pr approvals.PendingRequest) error {
				return q.Decide(pr.ID, false, "no network", "test")
			},
			want: []string{"Denied by the owner: no network."}},
		{name: "Write into the state dir is denied", tool: "Write", input: map[string]any{"file_path": "STATE/approvals/0123.decision.json", "content": "{}"},
			want: []string{"Denied by the bridge's approval rules", "protected path"}},
		{name: "Read through a planted symlink to the state dir is denied", tool: "Read", input: map[string]any{"file_path": "WS/planted/marker"},
			want: []string{"Denied by the bridge's approval rules", "protected path"}, absent: []string{"state-marker"}},
		// A subagent's own tool calls go through the same permission prompt
		// tool: the Agent call runs unattended, the subagent's chained Bash
		// call then waits for a human like any other (which is why Agent is
		// in DelegationTools).
		{name: "subagent tool calls reach the prompt tool", tool: "Agent",
			input: map[string]any{"description": "list files", "prompt": "run ls", "subagent_type": "general-purpose"},
			more:  []step{{"Bash", map[string]any{"command": "ls && echo from-subagent", "description": "sub"}}},
			human: func(q *approvals.Queue, pr approvals.PendingRequest) error {
				if pr.Tool != "Bash" || !strings.Contains(pr.Summary, "from-subagent") {
					return fmt.Errorf("pending request is %s %q, want the subagent's Bash", pr.Tool, pr.Summary)
				}
				return q.Decide(pr.ID, false, "not from a subagent", "test")
			},
			want:  []string{"Async agent launched"},
			audit: []string{"auto:allow:Agent", "pending::Bash", "human:deny:Bash"}},
		// Control: without credentials.envVars the harness's token is visible to
		// commands, so the setting above is what hides it.
		{name: "control: token visible without the env denial", mode: approvals.ModeOff, denyEnv: []string{},
			command: "echo token=[$ANTHROPIC_AUTH_TOKEN]", want: []string{"token=[sk-test-double-key]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each run has its own child process, state dir and double
			root, _ := filepath.EvalSymlinks(t.TempDir())
			ws := filepath.Join(root, "ws")
			state := filepath.Join(root, "state")
			outside := filepath.Join(root, "outside")
			home := filepath.Join(root, "home")
			for _, d := range []string{ws, outside, filepath.Join(home, ".ssh")} {
				mustDo(t, os.MkdirAll(d, 0o755))
			}
			secret := filepath.Join(home, ".ssh", "id_ed25519")
			mustDo(t, os.WriteFile(secret, []byte("canary-secret-0123456789abcdef\n"), 0o600))
			mustDo(t, os.WriteFile(filepath.Join(ws, "canary.txt"), []byte("x"), 0o644))
			mustDo(t, os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("outside-notes"), 0o644))
			dir, err := statedir.Open(state)
			mustDo(t, err)
			mustDo(t, os.WriteFile(filepath.Join(state, "marker"), []byte("state-marker"), 0o600))
			envFile := filepath.Join(root, ".env")
			mustDo(t, os.WriteFile(envFile, []byte("DEEPSEEK_API_KEY=sk-test-double-key\n"), 0o600))

			jobID := "job-real"
			mustDo(t, os.MkdirAll(dir.HarnessDir(jobID), 0o700))
			cfgPath := ConfigPath(dir, jobID)
			svc := NewService(dir, zerolog.Nop())
			mustDo(t, svc.Listen())
			t.Cleanup(func() { svc.Close(context.Background()) })
			child, err := svc.Register(Config{JobID: jobID, Workspace: ws, StateDir: state,
				Allow: []string{"ls", "cat", "echo"}, Protected: []string{state, envFile}, Timeout: time.Minute, ApprovalMode: c.mode})
			mustDo(t, err)
			mustDo(t, WriteChildConfig(cfgPath, child))
			mcpCfg := filepath.Join(dir.HarnessDir(jobID), "mcp.json")
			mustDo(t, statedir.WriteJSON(mcpCfg, map[string]any{"mcpServers": map[string]any{ServerName: map[string]any{
				"type": "stdio", "command": self, "args": []string{"-test.run=^$"}, "env": map[string]string{childEnv: cfgPath, traceEnv: os.Getenv(traceEnv)}}}}))
			settings := filepath.Join(dir.HarnessDir(jobID), "settings.json")
			mustDo(t, statedir.WriteJSON(settings, sandbox.ClaudeSettings(sandbox.SettingsOptions{
				Sandbox: true, DenyRead: sandbox.DefaultDenyRead(home, state, envFile), DenyWrite: []string{state, envFile}, DenyEnv: c.denyEnv})))

			mustDo(t, os.Symlink(state, filepath.Join(ws, "planted")))
			fm := &fakeModel{more: c.more, results: make(chan string, 16)}
			srv := httptest.NewServer(fm)
			t.Cleanup(srv.Close)
			port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
			repl := strings.NewReplacer("SECRET", secret, "OUTSIDE", outside, "STATE", state, "WS", ws, "PORT", port)
			var input map[string]any
			if c.input != nil {
				input = map[string]any{}
				for k, v := range c.input {
					if s, ok := v.(string); ok {
						v = repl.Replace(s)
					}
					input[k] = v
				}
			}
			fm.mu.Lock()
			fm.tool, fm.input, fm.command = c.tool, input, repl.Replace(c.command)
			fm.mu.Unlock()

			run := exec.CommandContext(t.Context(), claude, "-p", "run the scripted command", "--output-format", "stream-json", "--verbose",
				"--mcp-config", mcpCfg, "--strict-mcp-config", "--permission-prompt-tool", ToolFlag,
				"--settings", settings, "--max-turns", "4")
			run.Dir = ws
			run.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir.HarnessDir(jobID), "claude"),
				"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_AUTH_TOKEN=sk-test-double-key", "ANTHROPIC_MODEL=test-model",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
			var stdout, stderr strings.Builder
			run.Stdout, run.Stderr = &stdout, &stderr
			mustDo(t, run.Start())
			exited := make(chan error, 1)
			go func() { exited <- run.Wait() }()

			if c.human != nil {
				q := approvals.NewQueue(dir, zerolog.Nop())
				pr := waitPending(t, q, jobID, exited, &stdout, &stderr)
				if c.tool == "" && !strings.Contains(pr.Summary, "Bash: ls &&") || c.more == nil && pr.Tool != orDefault(c.tool, "Bash") {
					t.Errorf("pending summary %q", pr.Summary)
				}
				mustDo(t, c.human(q, pr))
			}

			// Every tool_result the model was sent, until claude exits.
			var results []string
		collect:
			for {
				select {
				case r := <-fm.results:
					results = append(results, r)
				case err := <-exited:
					if err != nil {
						t.Logf("claude exit: %v\nstderr:\n%s", err, stderr.String())
					}
					break collect
				case <-time.After(90 * time.Second):
					t.Fatalf("claude did not exit\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
				}
			}
			for len(fm.results) > 0 {
				results = append(results, <-fm.results)
			}
			if len(results) == 0 {
				t.Fatalf("no tool result reached the model\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			result := strings.Join(results, "\n")
			t.Logf("tool_result: %s", result)
			for _, w := range c.want {
				if !strings.Contains(result, w) {
					t.Errorf("tool_result lacks %q", w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(result, a) {
					t.Errorf("tool_result leaks %q", a)
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "written")); err == nil {
				t.Error("a sandboxed command wrote outside the workspace")
			}
			recs, _ := approvals.ReadAudit(dir, true)
			if len(recs) < 2 || recs[0].Event != approvals.EventRequest || recs[0].Tool != orDefault(c.tool, "Bash") {
				t.Errorf("audit log = %+v", recs)
			}
			var lines []string
			for _, r := range recs {
				lines = append(lines, r.Event+":"+string(r.Decision)+":"+r.Tool)
			}
			for _, want := range c.audit {
				if !slices.Contains(lines, want) {
					t.Errorf("audit log lacks %s: %v", want, lines)
				}
			}
		})
	}
}

// waitPending polls the queue (the child is another process) until the job
// has a pending request.
func waitPending(t *testing.T, q *approvals.Queue, jobID string, exited <-chan error, stdout, stderr *strings.Builder) approvals.PendingRequest {
	t.Helper()
	var pr approvals.PendingRequest
	var exit error
	gone := false
	found := poll.Until(90*time.Second, func() bool {
		if open, _ := q.PendingForJob(jobID); len(open) > 0 {
			pr = open[0]
			return true
		}
		select {
		case exit = <-exited:
			gone = true
		default:
		}
		return gone
	})
	switch {
	case gone:
		t.Fatalf("claude exited (%v) with nothing pending\nstdout:\n%s\nstderr:\n%s", exit, stdout.String(), stderr.String())
	case !found:
		t.Fatal("no pending request")
	}
	return pr
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type step struct {
	tool  string
	input map[string]any
}

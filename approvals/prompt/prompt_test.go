package prompt

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// world is a job's workspace beside the daemon's state dir and .env, both
// protected.
type world struct {
	root, ws, state, env string
	policy               rules.Policy
}

func newWorld(t testing.TB) world {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := world{root: root, ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"), env: filepath.Join(root, ".env")}
	mustDo(t, os.MkdirAll(w.ws, 0o755))
	mustDo(t, os.MkdirAll(filepath.Join(w.state, "approvals"), 0o755))
	mustDo(t, os.WriteFile(w.env, []byte("x"), 0o600))
	w.policy = rules.Policy{Workspace: w.ws, Allow: config.DefaultApproveAllow, Protected: []string{w.state, w.env}}
	return w
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rpcClient drives RunPrompt over pipes with JSON-RPC lines, like Claude Code.
type rpcClient struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan map[string]any
	done  chan error
	early map[string]map[string]any // responses that arrived before they were awaited
}

func startPrompt(t *testing.T, cfg Config) *rpcClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rpcClient{t: t, w: inW, lines: make(chan map[string]any, 16), done: make(chan error, 1), early: map[string]map[string]any{}}
	go func() {
		c.done <- runViaService(t, t.Context(), cfg, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-c.done; err != nil {
			t.Errorf("RunPrompt: %v", err)
		}
	})
	return c
}

func (c *rpcClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// response waits for the response with the given id (skipping notifications).
func (c *rpcClient) response(id float64) map[string]any {
	c.t.Helper()
	return c.responseID(id)
}

func (c *rpcClient) responseID(id any) map[string]any {
	c.t.Helper()
	key := fmt.Sprint(id)
	if m, ok := c.early[key]; ok {
		delete(c.early, key)
		return m
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("output closed before response %v", id)
			}
			if m["id"] == id {
				return m
			}
			if m["id"] != nil {
				c.early[fmt.Sprint(m["id"])] = m // another response, out of order
			}
		case <-timeout:
			c.t.Fatalf("no response %v", id)
		}
	}
}

// call sends tools/call approve and returns the decoded answer.
func (c *rpcClient) call(id float64, tool string, input map[string]any) Answer {
	c.t.Helper()
	c.sendCall(id, tool, input)
	return c.answer(id)
}

func (c *rpcClient) sendCall(id float64, tool string, input map[string]any) {
	c.t.Helper()
	args, _ := json.Marshal(map[string]any{"tool_name": tool, "input": input, "tool_use_id": fmt.Sprintf("toolu_test%v", id)})
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tools/call","params":{"name":"approve","arguments":%s}}`, id, args))
}

func (c *rpcClient) answer(id float64) Answer {
	c.t.Helper()
	return c.answerFrom(c.response(id))
}

func (c *rpcClient) answerFrom(m map[string]any) Answer {
	c.t.Helper()
	id := m["id"]
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if res == nil || res["isError"] == true || len(content) != 1 {
		c.t.Fatalf("tools/call %v = %v, want one content block", id, m)
	}
	block := content[0].(map[string]any)
	if block["type"] != "text" {
		c.t.Fatalf("content block %v is not text", block)
	}
	var a Answer
	dec := json.NewDecoder(strings.NewReader(block["text"].(string)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		c.t.Fatalf("answer %q: %v", block["text"], err)
	}
	return a
}

// runViaService is what a job's approval child and the daemon do together:
// a Service on loopback answers cfg's job, and the child (RunChild) serves
// Claude Code's side on in and out, forwarding each call to it.
func runViaService(t testing.TB, ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	svc := NewService(statedir.Dir{Root: cfg.StateDir}, zerolog.Nop())
	if err := svc.Listen(); err != nil {
		return err
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	child, err := svc.Register(cfg)
	if err != nil {
		return err
	}
	return RunChild(ctx, child, in, out, io.Discard)
}

func promptConfig(t *testing.T, w world) Config {
	return Config{JobID: "job-1", Workspace: w.ws, StateDir: w.state, Allow: w.policy.Allow,
		Protected: w.policy.Protected, Timeout: time.Hour}
}

// handshake plays the legacy opening: a server/discover probe without
// 2026-07-28 _meta gets a JSON-RPC method-not-found error that must not end
// the session, then initialize at 2025-11-25 works on the same session.
// (Claude Code 2.1.328 itself sends the probe with _meta, mcp-go answers it,
// and no initialize follows: TestRunPromptModernHandshake.)
func (c *rpcClient) handshake() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}`)
	disc := c.response(0)
	if e, _ := disc["error"].(map[string]any); e == nil || e["code"] != float64(-32601) {
		c.t.Fatalf("server/discover = %v, want a method-not-found error", disc)
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.328"}}}`)
	init := c.response(1)
	res, _ := init["result"].(map[string]any)
	info, _ := res["serverInfo"].(map[string]any)
	if res["protocolVersion"] != "2025-11-25" || info["name"] != "bridge" {
		c.t.Fatalf("initialize = %v", init)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestRunPromptEndToEnd(t *testing.T) {
	w := newWorld(t)
	pending := make(chan approvals.PendingRequest, 4)
	testHookPending = func(pr approvals.PendingRequest) { pending <- pr }
	t.Cleanup(func() { testHookPending = nil })
	c := startPrompt(t, promptConfig(t, w))
	c.handshake()

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := c.response(2)
	tools := list["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "approve" {
		t.Fatalf("tools/list = %v", list)
	}
	ann := tools[0].(map[string]any)["annotations"].(map[string]any)
	for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		if _, ok := ann[k]; !ok {
			t.Errorf("annotation %s not set: %v", k, ann)
		}
	}

	t.Run("allowed by the rules, input unchanged", func(t *testing.T) {
		in := map[string]any{"command": "git status", "description": "status"}
		a := c.call(3, "Bash", in)
		if a.Behavior != "allow" || a.UpdatedInput["command"] != "git status" || a.UpdatedInput["description"] != "status" || a.Message != "" {
			t.Fatalf("answer = %+v", a)
		}
	})
	t.Run("denied by the rules", func(t *testing.T) {
		a := c.call(4, "Bash", map[string]any{"command": "  "})
		if a.Behavior != "deny" || !strings.Contains(a.Message, "empty command") || !strings.Contains(a.Message, "Do not try to work around") {
			t.Fatalf("answer = %+v", a)
		}
		a = c.call(5, "Write", map[string]any{"file_path": w.state + "/approvals/x.decision.json", "content": "{}"})
		if a.Behavior != "deny" || !strings.Contains(a.Message, "protected") {
			t.Fatalf("write into the state dir = %+v", a)
		}
	})
	t.Run("approved by a human", func(t *testing.T) {
		c.sendCall(6, "Bash", map[string]any{"command": "make && make install"})
		pr := <-pending
		if pr.JobID != "job-1" || pr.Tool != "Bash" || !strings.Contains(pr.Reason, "chaining") {
			t.Fatalf("pending = %+v", pr)
		}
		q := approvals.NewQueue(statedir.Dir{Root: w.state}, zerolog.Nop())
		if open, _ := q.PendingForJob("job-1"); len(open) != 1 || open[0].ID != pr.ID {
			t.Fatalf("PendingForJob = %v", open)
		}
		if err := q.Decide(pr.ID, true, "", "alice"); err != nil {
			t.Fatal(err)
		}
		if a := c.answer(6); a.Behavior != "allow" || a.UpdatedInput["command"] != "make && make install" {
			t.Fatalf("answer = %+v", a)
		}
	})
	t.Run("denied by a human", func(t *testing.T) {
		c.sendCall(7, "Read", map[string]any{"file_path": "/etc/hostname"})
		pr := <-pending
		q := approvals.NewQueue(statedir.Dir{Root: w.state}, zerolog.Nop())
		if err := q.Decide(pr.ID, false, "stay in the workspace", "alice"); err != nil {
			t.Fatal(err)
		}
		a := c.answer(7)
		want := "Denied by the owner: stay in the workspace. Do not try to work around this denial; report it in your final answer."
		if a.Behavior != "deny" || a.Message != want {
			t.Fatalf("answer = %+v, want message %q", a, want)
		}
	})
	t.Run("malformed calls", func(t *testing.T) {
		c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":"ls"}}}`)
		if a := c.answer(8); a.Behavior != "deny" {
			t.Fatalf("input as a string = %+v", a)
		}
		c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"approve","arguments":{"input":{}}}}`)
		// No tool name: still one text block holding a deny, so the harness
		// never sees a failed permission check it might treat differently.
		if a := c.answer(9); a.Behavior != "deny" || !strings.Contains(a.Message, "no tool name") {
			t.Fatalf("no tool_name = %+v", a)
		}
	})

	recs, err := approvals.ReadAudit(statedir.Dir{Root: w.state}, true)
	if err != nil {
		t.Fatal(err)
	}
	var ev []string
	for _, r := range recs {
		if r.JobID != "job-1" {
			t.Errorf("audit record without the job id: %+v", r)
		}
		ev = append(ev, r.Event+":"+string(r.Decision))
		// auto and pending records carry what the rules saw, not only the
		// one-line summary.
		if (r.Event == approvals.EventAuto || r.Event == approvals.EventPending) && r.Tool != "" && r.Input == nil {
			t.Errorf("%s record of %s has no input: %+v", r.Event, r.Tool, r)
		}
	}
	for _, want := range []string{"request:", "auto:allow", "auto:deny", "pending:", "human:allow", "human:deny"} {
		found := false
		for _, e := range ev {
			found = found || e == want
		}
		if !found {
			t.Errorf("audit log lacks %s: %v", want, ev)
		}
	}
}

// When the harness goes away (stdin closes) while a request waits, the
// request is denied and logged, and RunPrompt returns.
func TestRunPromptHarnessGoesAway(t *testing.T) {
	w := newWorld(t)
	pending := make(chan approvals.PendingRequest, 1)
	testHookPending = func(pr approvals.PendingRequest) { pending <- pr }
	t.Cleanup(func() { testHookPending = nil })
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- runViaService(t, context.Background(), promptConfig(t, w), inR, io.Discard) }()
	c := &rpcClient{t: t, w: inW}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.sendCall(2, "WebFetch", map[string]any{"url": "https://example.com", "prompt": "x"})
	pr := <-pending
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("RunPrompt = %v", err)
	}
	// The child's request ended with it; the service sees its connection
	// close and cancels the request.
	cancelled := func() bool {
		recs, _ := approvals.ReadAudit(statedir.Dir{Root: w.state}, true)
		return len(recs) > 0 && recs[len(recs)-1].Event == approvals.EventCancel
	}
	if !poll.Until(10*time.Second, cancelled) {
		t.Fatal("the request of a harness that went away was never cancelled")
	}
	q := approvals.NewQueue(statedir.Dir{Root: w.state}, zerolog.Nop())
	if err := q.Decide(pr.ID, true, "", "alice"); err == nil {
		t.Fatal("a request whose harness went away could still be approved")
	}
	recs, _ := approvals.ReadAudit(statedir.Dir{Root: w.state}, true)
	if last := recs[len(recs)-1]; last.Event != approvals.EventCancel || last.Decision != rules.Deny || last.ID != pr.ID {
		t.Fatalf("last audit record = %+v", last)
	}
}

func TestPrompterApprovalOff(t *testing.T) {
	w := newWorld(t)
	cfg := promptConfig(t, w)
	for _, how := range []string{"mode", "flag"} {
		t.Run(how, func(t *testing.T) {
			c := cfg
			p, err := NewPrompter(c, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if how == "mode" {
				p.cfg.ApprovalMode = approvals.ModeOff
			} else {
				if err := approvals.SetApprovalOff(p.dir, "alice"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { approvals.ClearApprovalOff(p.dir) })
			}
			a := p.Answer(t.Context(), rules.Request{Tool: "Bash", Input: map[string]any{"command": "ls && id"}})
			if a.Behavior != "allow" {
				t.Fatalf("ask with approval off = %+v, want allow", a)
			}
			// A rules' deny stands even with approval off.
			a = p.Answer(t.Context(), rules.Request{Tool: "Read", Input: map[string]any{"file_path": w.env}})
			if a.Behavior != "deny" {
				t.Fatalf("protected read with approval off = %+v, want deny", a)
			}
			recs, _ := approvals.ReadAudit(p.dir, false)
			loud := false
			for _, r := range recs {
				loud = loud || r.Event == approvals.EventApprovalOff && strings.Contains(r.Reason, "HUMAN APPROVAL IS OFF") && strings.Contains(r.Reason, "OS sandbox still applies")
			}
			if !loud {
				t.Fatalf("audit log does not say approval is off: %+v", recs)
			}
			if open, _ := p.queue.Pending(); len(open) != 0 {
				t.Fatalf("approval off still queued: %v", open)
			}
		})
	}
}

func TestPromptConfigRoundTrip(t *testing.T) {
	w := newWorld(t)
	dir, _ := statedir.Open(w.state)
	path := ConfigPath(dir, "job-1")
	cfg := promptConfig(t, w)
	cfg.Timeout = 1500 * time.Millisecond
	cfg.Jailed = true
	if err := WriteConfig(path, cfg); err == nil {
		// HarnessDir does not exist yet: writing must fail rather than create it elsewhere.
		t.Log("harness dir existed")
	}
	mustDo(t, mkdirAll(filepath.Dir(path)))
	if err := WriteConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.JobID != "job-1" || got.Workspace != w.ws || got.StateDir != w.state || got.Timeout != 1500*time.Millisecond ||
		got.ApprovalMode != approvals.ModeOn || len(got.Allow) != len(cfg.Allow) || len(got.Protected) != 2 || !got.Jailed {
		t.Fatalf("round trip = %+v", got)
	}
	for name, bad := range map[string]Config{
		"no job":            {Workspace: w.ws, StateDir: w.state, Timeout: time.Second},
		"relative ws":       {JobID: "j", Workspace: "ws", StateDir: w.state, Timeout: time.Second},
		"relative state":    {JobID: "j", Workspace: w.ws, StateDir: "st", Timeout: time.Second},
		"no timeout":        {JobID: "j", Workspace: w.ws, StateDir: w.state},
		"bad approval mode": {JobID: "j", Workspace: w.ws, StateDir: w.state, Timeout: time.Second, ApprovalMode: "maybe"},
	} {
		if err := WriteConfig(path, bad); err == nil {
			t.Errorf("%s: WritePromptConfig accepted %+v", name, bad)
		}
	}
	if _, err := LoadConfig(filepath.Join(w.root, "missing.json")); err == nil {
		t.Error("LoadPromptConfig of a missing file succeeded")
	}
}

func mkdirAll(p string) error { return os.MkdirAll(p, 0o700) }

// claudeMeta is the _meta Claude Code 2.1.328 puts on every request
// (captured from the real binary with BRIDGE_APPROVALS_TEST_TRACE).
const claudeMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","title":"Claude Code","version":"2.1.328","description":"Anthropic's agentic coding tool","websiteUrl":"https://claude.com/claude-code"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{},"url":{}}}}`

// TestRunPromptModernHandshake replays what Claude Code 2.1.328 actually
// sends to mcp-go v1.2.1: server/discover with 2026-07-28 _meta succeeds, so
// it never sends initialize and calls tools/list and tools/call statelessly.
func TestRunPromptModernHandshake(t *testing.T) {
	w := newWorld(t)
	c := startPrompt(t, promptConfig(t, w))
	c.send(`{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":` + claudeMeta + `}}`)
	m := c.responseID("server-discover-probe-1")
	res, _ := m["result"].(map[string]any)
	if res == nil || !strings.Contains(fmt.Sprint(res["supportedVersions"]), "2026-07-28") {
		t.Fatalf("server/discover = %v", m)
	}
	c.send(`{"method":"tools/list","jsonrpc":"2.0","id":0,"params":{"_meta":` + claudeMeta + `}}`)
	if tools := c.response(0)["result"].(map[string]any)["tools"].([]any); len(tools) != 1 {
		t.Fatalf("tools/list = %v", tools)
	}
	meta := strings.TrimSuffix(claudeMeta, "}") + `,"claudecode/toolUseId":"toolu_1","progressToken":1}`
	c.send(`{"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls","description":"list"},"tool_use_id":"toolu_1"},"_meta":` + meta + `},"jsonrpc":"2.0","id":1}`)
	if a := c.answer(1); a.Behavior != "allow" || a.UpdatedInput["command"] != "ls" || a.UpdatedInput["description"] != "list" {
		t.Fatalf("answer = %+v", a)
	}
	c.send(`{"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Read","input":{"file_path":"` + w.env + `"},"tool_use_id":"toolu_2"},"_meta":` + meta + `},"jsonrpc":"2.0","id":2}`)
	if a := c.answer(2); a.Behavior != "deny" || !strings.Contains(a.Message, "protected") {
		t.Fatalf("answer = %+v", a)
	}
}

// Calls waiting for a human do not hold up calls the rules answer at once.
func TestRunPromptWaitingCallsDoNotBlockOthers(t *testing.T) {
	w := newWorld(t)
	pending := make(chan approvals.PendingRequest, 16)
	testHookPending = func(pr approvals.PendingRequest) { pending <- pr }
	t.Cleanup(func() { testHookPending = nil })
	c := startPrompt(t, promptConfig(t, w))
	c.handshake()
	const waiting = 8 // more than mcp-go's default of 5 workers
	for i := range waiting {
		c.sendCall(float64(10+i), "Bash", map[string]any{"command": fmt.Sprintf("ls && echo %d", i)})
	}
	for i := range waiting {
		select {
		case <-pending:
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of %d calls reached the queue: the others wait for a worker", i, waiting)
		}
	}
	if a := c.call(99, "Bash", map[string]any{"command": "ls"}); a.Behavior != "allow" {
		t.Fatalf("answer = %+v", a)
	}
	q := approvals.NewQueue(statedir.Dir{Root: w.state}, zerolog.Nop())
	if n, err := q.CancelJob("job-1"); err != nil || n != waiting {
		t.Fatalf("CancelJob = %d, %v", n, err)
	}
	for i := range waiting {
		if a := c.answer(float64(10 + i)); a.Behavior != "deny" || !strings.Contains(a.Message, "cancelled") {
			t.Fatalf("answer %d = %+v", i, a)
		}
	}
}

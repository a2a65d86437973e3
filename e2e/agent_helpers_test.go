package e2e

// Helpers of the agent-job tests (agent_*_test.go): a bridge wired to the
// real Claude Code and the double's Anthropic side, tool calls that decode the
// agent payload, and process-tree checks by the job's marker.

import (
	"context"
	"encoding/json"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

var hexNonce = regexp.MustCompile(`^[0-9a-f]{32}$`)

// claudeBin is the pinned Claude Code (scripts/install.sh claude).
func claudeBin(t testing.TB) string { t.Helper(); return testenv.ClaudeBin(t) }

// agentBridge is a bridge that can run agent jobs, with one allowed root.
type agentBridge struct {
	*bridgeProc
	d    *dt.Server
	root string // DEEPSEEK_ALLOWED_ROOTS ("" when none)
}

// startAgentBridge starts the double and a bridge pointed at it, with the real
// Claude Code and an allowed root in a temp dir (none when noRoots). env goes
// on top. At cleanup — after the bridge has stopped — it fails the test if
// any process of any of its jobs is still alive.
func startAgentBridge(t *testing.T, noRoots bool, env map[string]string) *agentBridge {
	t.Helper()
	return startAgentBridgeBin(t, binary(t, "bridge"), noRoots, env)
}

// startAgentBridgeBin is startAgentBridge with a given bridge binary (e.g. a
// copy a test may see overwritten).
func startAgentBridgeBin(t *testing.T, bin string, noRoots bool, env map[string]string) *agentBridge {
	t.Helper()
	base := t.TempDir()
	state := filepath.Join(base, "state")
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil { // the log file lives there
		t.Fatal(err)
	}
	t.Cleanup(func() { assertNoJobProcesses(t, state) }) // runs after the bridge's own cleanup
	registerAgentState(state)                            // and TestMain checks the whole run at its end
	d := startDouble(t)
	e := mergeEnv(doubleEnv(d), map[string]string{
		"BRIDGE_STATE_DIR":  state,
		"BRIDGE_CLAUDE_BIN": claudeBin(t),
	})
	if noRoots {
		root = ""
	} else {
		e["DEEPSEEK_ALLOWED_ROOTS"] = root
	}
	b := startBridgeBin(t, bin, mergeEnv(e, env))
	return &agentBridge{bridgeProc: b, d: d, root: root}
}

// workspace makes a fresh directory inside the root, with files in it.
func (a *agentBridge) workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws, err := os.MkdirTemp(a.root, "ws-")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func (a *agentBridge) dir() statedir.Dir { return statedir.Dir{Root: a.StateDir()} }

// bridgectl runs the real bridgectl against this bridge's state dir.
func (a *agentBridge) bridgectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary(t, "bridgectl"), args...)
	for k, v := range a.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// approveEverything plays a human who approves every request waiting in the
// bridge's approval queue, until the test ends.
func (a *agentBridge) approveEverything(t *testing.T) {
	t.Helper()
	q := approvals.NewQueue(a.dir(), zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owner: the test; joined at its cleanup
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			ps, _ := q.Pending()
			for _, p := range ps {
				_ = q.Decide(p.ID, true, "e2e: approved", "e2e")
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// tailTurn is a model turn that runs `tail -f wait.log`: the job stays
// running until it is stopped (workspaces made with a wait.log file).
func tailTurn() dt.Turn {
	return dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "tail -f wait.log", "description": "wait"}))
}

// startTailJob scripts turns then tailTurn, starts a job in a fresh
// workspace (with wait.log) and returns its id once its tail runs.
func (a *agentBridge) startTailJob(t *testing.T, cs *mcp.ClientSession, turns ...dt.Turn) (id, ws string) {
	t.Helper()
	ws = a.workspace(t, map[string]string{"wait.log": ""})
	a.d.ScriptAnthropic(append(turns, tailTurn())...)
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Wait.", "workspace": ws}, nil)
	if c.IsError || c.P.JobID == "" {
		t.Fatalf("start = %+v: %s", c.P, c.Text)
	}
	waitJobCommand(t, c.P.JobID, "tail", 60*time.Second)
	return c.P.JobID, ws
}

// agentCall is one decoded answer of an agent tool.
type agentCall struct {
	IsError bool
	Text    string
	P       tools.AgentJobPayload
}

// callAgent calls an agent tool with the Go SDK client and decodes its answer.
func callAgent(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, meta mcp.Meta) agentCall {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out agentCall
	out.IsError = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.Text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out.P); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", tool, b, err)
		}
	}
	return out
}

// pollUntil polls the job until ok holds or it settles, within limit.
func pollUntil(t *testing.T, cs *mcp.ClientSession, id string, limit time.Duration, ok func(tools.AgentJobPayload) bool) agentCall {
	t.Helper()
	wait := 2
	if ok == nil {
		wait = 40
	}
	var c agentCall
	if !poll.Until(limit, func() bool {
		c = callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": wait}, nil)
		if c.IsError {
			t.Fatalf("poll %s: %s", id, c.Text)
		}
		if (ok != nil && ok(c.P)) || jobs.Status(c.P.Status).Final() {
			return true
		}
		// A poll of a job waiting for a human waits for the answer itself.
		return false
	}) {
		t.Fatalf("job %s still %s after %v: %s", id, c.P.Status, limit, c.Text)
	}
	return c
}

// waitSettled polls until the job is final.
func waitSettled(t *testing.T, cs *mcp.ClientSession, id string, limit time.Duration) agentCall {
	t.Helper()
	return pollUntil(t, cs, id, limit, nil)
}

// assertJobTreeGone fails unless no process carries the job's marker (give the
// kernel a moment: a killed process disappears once its parent reaps it).
func assertJobTreeGone(t testing.TB, id string) {
	t.Helper()
	var pids []int
	if !poll.Until(5*time.Second, func() bool {
		pids = harness.JobProcesses(id)
		return len(pids) == 0
	}) {
		harness.KillJobProcesses(id)
		t.Errorf("job %s: processes of its tree still alive: %v", id, pids)
	}
}

// waitJobCommand waits until a process of the job's tree runs a command
// line starting with prefix (the model's Bash command has begun).
func waitJobCommand(t *testing.T, id, prefix string, limit time.Duration) {
	t.Helper()
	if !poll.Until(limit, func() bool {
		for _, pid := range harness.JobProcesses(id) {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if strings.HasPrefix(string(b), prefix) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("job %s: no %q process within %v", id, prefix, limit)
	}
}

// assertNoJobProcesses checks every job the state dir knows.
func assertNoJobProcesses(t *testing.T, state string) {
	t.Helper()
	snaps, _ := jobs.LoadAll(statedir.Dir{Root: state})
	for _, s := range snaps {
		assertJobTreeGone(t, s.ID)
	}
}

// assertNotDone checks the invariants of every end but done.
func assertNotDone(t *testing.T, c agentCall, status jobs.Status) {
	t.Helper()
	if c.IsError {
		t.Fatalf("IsError: %s", c.Text)
	}
	if c.P.Status != string(status) {
		t.Fatalf("status %s, want %s: %s", c.P.Status, status, c.Text)
	}
	if c.P.Nonce != "" || c.P.Result != "" {
		t.Errorf("a %s job carries nonce %q / result %q", status, c.P.Nonce, c.P.Result)
	}
	if c.P.Partial == nil || !strings.Contains(c.P.Partial.Label, "NOT A RESULT") {
		t.Errorf("partial = %+v", c.P.Partial)
	}
	if !strings.Contains(c.Text, "no result and no nonce") {
		t.Errorf("text does not say there is no result: %s", c.Text)
	}
}

// assertSnapshotFile reads the job's file: valid JSON, the expected status.
func assertSnapshotFile(t *testing.T, dir statedir.Dir, id string, status jobs.Status) jobs.Snapshot {
	t.Helper()
	raw, err := os.ReadFile(dir.JobFile(id))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(raw) {
		t.Fatalf("snapshot of %s is not valid JSON", id)
	}
	s, err := jobs.Load(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != status {
		t.Errorf("snapshot status %s, want %s", s.Status, status)
	}
	if status != jobs.StatusDone && (s.Nonce != "" || s.Result != "") {
		t.Errorf("snapshot of a %s job carries nonce/result", status)
	}
	return s
}

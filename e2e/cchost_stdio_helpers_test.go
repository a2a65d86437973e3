package e2e

// Claude Code as an MCP host that launches `bridge stdio` (not a job's
// harness): its servers come from --mcp-config, its model is a double whose
// every turn a brain computes from the conversation so far, and a daemon
// the first `bridge stdio` starts itself.
//
//	writeStdioEnv(t, jobModel, extra) (envFile, state, root)  a .env for an auto-started daemon
//	stdioCtl(t, envFile, args...) string                         bridgectl --env envFile ARGS (must succeed)
//	stdioHostBrain(f) dt.Turn                                       a model turn from the host's tool calls so far
//	runStdioHost(t, model, mcpConfig, prompt, allowed...) stdioHostResult  one `claude -p` session to its end
//	stdioProcs(envFile) []string                               live `bridge stdio` processes of that .env
//	stdioClient(t, envFile) *mcp.ClientSession                 the Go SDK's client over `bridge stdio`

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
)

// writeStdioEnv writes the .env a `bridge stdio` host starts its daemon
// with: the job model double, the pinned Claude Code, one allowed root and
// a state dir under a fresh temp dir, then extra lines. At cleanup it stops
// the daemon with bridgectl and checks that no job process is left.
func writeStdioEnv(t *testing.T, jobModel *dt.Server, extra map[string]string) (envFile, state, root string) {
	t.Helper()
	base := t.TempDir()
	state, root = filepath.Join(base, "state"), filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	vals := mergeEnv(doubleEnv(jobModel), map[string]string{
		"MCP_PATH_SECRET":        testSecret,
		"HOST":                   "127.0.0.1",
		"PORT":                   "0",
		"BRIDGE_STATE_DIR":       state,
		"BRIDGE_LOG_LEVEL":       "debug",
		"BRIDGE_CLAUDE_BIN":      claudeBin(t),
		"DEEPSEEK_ALLOWED_ROOTS": root,
		"RATE_LIMIT_PER_MINUTE":  "6000",
	}, extra)
	var b strings.Builder
	for k, v := range vals {
		b.WriteString(k + "=" + v + "\n")
	}
	envFile = filepath.Join(base, "bridge.env")
	if err := os.WriteFile(envFile, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	registerAgentState(state)
	t.Cleanup(func() { assertNoJobProcesses(t, state) })
	t.Cleanup(func() {
		stdioCtlCmd(t, envFile, "stop").Run() // whoever started it, it stops here
		assertNotInFiles(t, []string{filepath.Join(state, "bridge.log")}, testSecret, jobModel.Key())
	})
	return envFile, state, root
}

// stdioCtlCmd is bridgectl --env envFile ARGS, with a minimal environment.
func stdioCtlCmd(t *testing.T, envFile string, args ...string) *exec.Cmd {
	t.Helper()
	binary(t, "bridge") // next to bridgectl, where it looks first
	cmd := exec.Command(binary(t, "bridgectl"), append([]string{"--env", envFile}, args...)...)
	cmd.Env = stdioHostEnv(t)
	cmd.Dir = t.TempDir()
	return cmd
}

// stdioCtl runs bridgectl and returns its stdout; it must succeed.
func stdioCtl(t *testing.T, envFile string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := stdioCtlCmd(t, envFile, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bridgectl %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

// stdioHostEnv is the environment of a host process: PATH and a fresh HOME.
func stdioHostEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
}

// stdioHostCall is one tool call the host's model made, with its result.
type stdioHostCall struct {
	Name    string
	Args    map[string]any
	Result  string // the tool_result's text ("" while unanswered)
	IsError bool
}

// stdioHostCalls lists the tool calls of the conversation a request carries, in order.
func stdioHostCalls(r dt.Request) []stdioHostCall {
	var calls []stdioHostCall
	at := map[string]int{}
	for _, m := range r.Messages() {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			switch bm["type"] {
			case "tool_use":
				id, _ := bm["id"].(string)
				name, _ := bm["name"].(string)
				args, _ := bm["input"].(map[string]any)
				at[id] = len(calls)
				calls = append(calls, stdioHostCall{Name: name, Args: args})
			case "tool_result":
				id, _ := bm["tool_use_id"].(string)
				if i, ok := at[id]; ok {
					calls[i].Result = stdioResultText(bm["content"])
					calls[i].IsError, _ = bm["is_error"].(bool)
				}
			}
		}
	}
	return calls
}

// stdioResultText flattens a tool_result's content (a string or text blocks).
func stdioResultText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var parts []string
	list, _ := v.([]any)
	for _, p := range list {
		pm, _ := p.(map[string]any)
		if s, ok := pm["text"].(string); ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// stdioHostBrain is a host model turn computed from the tool calls so far.
func stdioHostBrain(f func(calls []stdioHostCall) dt.Turn) dt.Turn {
	return dt.Func(func(r dt.Request) dt.Turn { return f(stdioHostCalls(r)) })
}

// stdioPayload reads the structuredContent JSON Claude Code hands its
// model as an agent tool's result.
func stdioPayload(t *testing.T, c stdioHostCall) map[string]any {
	var p map[string]any
	if err := json.Unmarshal([]byte(c.Result), &p); err != nil {
		t.Errorf("%s result is not the payload JSON (%v): %q", c.Name, err, c.Result)
	}
	return p
}

// stdioHostResult is the end of one host session.
type stdioHostResult struct {
	Result  string // the result line's text
	IsError bool
	Output  string // all of stdout (stream-json)
	Stderr  string
}

// runStdioHost runs one `claude -p prompt` session, registered with the
// servers of mcpConfig, its model the double model, allowed the named tools,
// and returns when Claude Code has exited.
func runStdioHost(t *testing.T, model *dt.Server, mcpConfig []byte, prompt string, allowed ...string) stdioHostResult {
	t.Helper()
	stdout, stderr, err := execClaudeHost(t, model, mcpConfig, prompt, allowed...)
	res := stdioHostResult{Output: stdout, Stderr: stderr}
	sc := bufio.NewScanner(strings.NewReader(res.Output))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	found := false
	for sc.Scan() {
		var line struct {
			Type    string `json:"type"`
			Result  string `json:"result"`
			IsError bool   `json:"is_error"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "result" {
			res.Result, res.IsError, found = line.Result, line.IsError, true
		}
	}
	if err != nil || !found {
		t.Fatalf("claude -p: %v (result line found: %v)\nstdout:\n%s\nstderr:\n%s", err, found, res.Output, res.Stderr)
	}
	return res
}

// stdioProcs lists the live `bridge stdio` processes whose command line
// names envFile (each host session's own).
func stdioProcs(envFile string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		cmd, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("stdio\x00")) || !bytes.Contains(cmd, []byte(envFile)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + d.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		out = append(out, d.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// stdioClient is an MCP host (the official Go SDK's client) that launches
// `bridge stdio --env envFile`, as a host registered with it does.
func stdioClient(t *testing.T, envFile string) *mcp.ClientSession {
	t.Helper()
	return stdioClientWith(t, envFile, nil)
}

// stdioClientWith is stdioClient with client options (an elicitation
// handler: a host that asks its user).
func stdioClientWith(t *testing.T, envFile string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary(t, "bridge"), "stdio", "--env", envFile)
	cmd.Env = stdioHostEnv(t)
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-host", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over bridge stdio: %v\nstderr:\n%s", err, errb.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

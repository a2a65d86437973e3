package e2e

// Claude Code as the MCP host: the pinned binary registered with the
// bridge's URL through --mcp-config, its own model a second double (not the
// one the bridge's jobs use), scripted turn by turn. What the host's model
// receives from a tool — the tool_result in the model's next request — is
// in that double's recorded requests.
//
//	runClaudeHost(t, url, turns...) ccHostRun      one `claude -p` run to its end
//	execClaudeHost(t, model, mcpConfig, prompt, allowed...)  the session itself, shared with the stdio host tests
//	toolSearch(server, tool) dt.Turn                the ToolSearch turn that loads an MCP tool
//	loadTool(name) dt.Turn                          the same, by the tool's full name
//	mcpCall(server, tool, args) dt.Turn             a call of an MCP tool once loaded
//	(ccHostRun).toolResults() []string              the tool_result texts the host's model was sent

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// ccHostServer is the name the bridge is registered under in the host.
const ccHostServer = "bridge"

// ccHostLimit bounds one host run.
const ccHostLimit = 3 * time.Minute

// ccHostRun is what one host run left: its stream-json output and the
// requests its model got.
type ccHostRun struct {
	Stdout, Stderr string
	Requests       []dt.Request
}

// toolSearch is the turn Claude Code's model must take before an MCP tool is
// offered to it: Claude Code defers MCP tools behind ToolSearch.
func toolSearch(server, tool string) dt.Turn {
	return loadTool("mcp__" + server + "__" + tool)
}

// loadTool is the ToolSearch turn that loads the deferred MCP tool of that
// full name (mcp__SERVER__TOOL).
func loadTool(name string) dt.Turn {
	return dt.ToolCalls(dt.Call("ToolSearch", map[string]any{"query": "select:" + name, "max_results": 5}))
}

// mcpCall is a turn calling an MCP tool of server.
func mcpCall(server, tool string, args map[string]any) dt.Turn {
	return dt.ToolCalls(dt.Call("mcp__"+server+"__"+tool, args))
}

// runClaudeHost runs the pinned Claude Code once, headless, with the MCP
// server at url registered as ccHostServer (over HTTP) and its tools
// allowed, its model scripted with turns on a double of its own.
func runClaudeHost(t *testing.T, url, prompt string, turns ...dt.Turn) ccHostRun {
	t.Helper()
	d := startDouble(t)
	d.ScriptAnthropic(turns...)
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		ccHostServer: map[string]any{"type": "http", "url": url},
	}})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, runErr := execClaudeHost(t, d, cfg, prompt, "mcp__"+ccHostServer)
	if runErr != nil {
		t.Logf("claude as host exited: %v\nstderr:\n%s", runErr, stderr)
	}
	return ccHostRun{Stdout: stdout, Stderr: stderr, Requests: d.AnthropicRequests()}
}

// execClaudeHost runs one `claude -p prompt` session as an MCP host: the
// servers of mcpConfig alone, its model the double model, ToolSearch and
// the named tools allowed, a fresh HOME and config dirs, in its own process
// group. It fails the test if the session does not end within ccHostLimit,
// and returns its stdout (stream-json), stderr and how it exited.
func execClaudeHost(t *testing.T, model *dt.Server, mcpConfig []byte, prompt string, allowed ...string) (stdout, stderr string, err error) {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, mcpConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ccHostLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudeBin(t), "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--mcp-config", cfgFile, "--strict-mcp-config", "--setting-sources", "user",
		"--allowedTools", strings.Join(append([]string{"ToolSearch"}, allowed...), ","))
	cmd.Dir = dir
	cmd.Env = append(stdioHostEnv(t),
		"CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"),
		"ANTHROPIC_BASE_URL="+model.URL()+"/anthropic", "ANTHROPIC_AUTH_TOKEN="+model.Key(),
		"ANTHROPIC_MODEL=deepseek-flash", "ANTHROPIC_SMALL_FAST_MODEL=deepseek-flash",
		"ANTHROPIC_DEFAULT_HAIKU_MODEL=deepseek-flash", "ANTHROPIC_DEFAULT_SONNET_MODEL=deepseek-flash",
		"ANTHROPIC_DEFAULT_OPUS_MODEL=deepseek-flash", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("claude as host did not end within %v\nstdout:\n%s\nstderr:\n%s", ccHostLimit, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// toolResults are the tool_result texts the host's model was sent, in order.
func (r ccHostRun) toolResults() []string {
	var out []string
	seen := map[string]bool{}
	for _, req := range r.Requests {
		for _, txt := range req.ToolResultTexts() {
			if !seen[txt] {
				seen[txt] = true
				out = append(out, txt)
			}
		}
	}
	return out
}

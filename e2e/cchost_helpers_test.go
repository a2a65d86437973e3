package e2e

// Claude Code as the MCP host: the pinned binary registered with the
// bridge's URL through --mcp-config, its own model a second double (not the
// one the bridge's jobs use), scripted turn by turn. What the host's model
// receives from a tool — the tool_result in the model's next request — is
// in that double's recorded requests.
//
//	runClaudeHost(t, url, turns...) ccHostRun      one `claude -p` run to its end
//	toolSearch(server, tool) dt.Turn                the ToolSearch turn that loads an MCP tool
//	mcpCall(server, tool, args) dt.Turn             a call of an MCP tool once loaded
//	(ccHostRun).toolResults() []string              the tool_result texts the host's model was sent

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	return dt.ToolCalls(dt.Call("ToolSearch", map[string]any{"query": "select:mcp__" + server + "__" + tool, "max_results": 5}))
}

// mcpCall is a turn calling an MCP tool of server.
func mcpCall(server, tool string, args map[string]any) dt.Turn {
	return dt.ToolCalls(dt.Call("mcp__"+server+"__"+tool, args))
}

// runClaudeHost runs the pinned Claude Code once, headless, with the MCP
// server at url registered as ccHostServer (over HTTP) and its tools
// allowed, its model scripted with turns on a double of its own. It fails
// the test if the run does not end within ccHostLimit.
func runClaudeHost(t *testing.T, url, prompt string, turns ...dt.Turn) ccHostRun {
	t.Helper()
	d := startDouble(t)
	d.ScriptAnthropic(turns...)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		ccHostServer: map[string]any{"type": "http", "url": url},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), ccHostLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudeBin(t), "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--mcp-config", cfgFile, "--strict-mcp-config", "--allowedTools", "mcp__"+ccHostServer, "--max-turns", "8")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir, "claude"),
		"ANTHROPIC_BASE_URL=" + d.URL() + "/anthropic", "ANTHROPIC_AUTH_TOKEN=" + d.Key(), "ANTHROPIC_MODEL=deepseek-flash",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	run := ccHostRun{Stdout: stdout.String(), Stderr: stderr.String(), Requests: d.AnthropicRequests()}
	if ctx.Err() != nil {
		t.Fatalf("claude as host did not end within %v\nstdout:\n%s\nstderr:\n%s", ccHostLimit, run.Stdout, run.Stderr)
	}
	if runErr != nil {
		t.Logf("claude as host exited: %v\nstderr:\n%s", runErr, run.Stderr)
	}
	return run
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

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// The real Claude Code as a host of `bridge stdio` registered before setup
// (no MCP_PATH_SECRET, so no daemon can start): it still lists the tools,
// and a call's result, which its model reads, says to run `bridgectl
// setup`. Before, the host showed only "Failed to connect —
// CONNECTION_CLOSED" and its model saw no tool at all.
func TestClaudeCodeSeesStdioBeforeSetupAsAToolError(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	envFile := filepath.Join(base, "bridge.env")
	if err := os.WriteFile(envFile, []byte("BRIDGE_STATE_DIR="+filepath.Join(base, "state")+"\nHOST=127.0.0.1\nPORT=0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"deepseek": map[string]any{"type": "stdio", "command": binary(t, "bridge"), "args": []string{"stdio", "--env", envFile}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	const flash = "mcp__deepseek__deepseek_flash"
	model := dt.New(dt.WithDefault(stdioHostBrain(func(calls []stdioHostCall) dt.Turn {
		switch len(calls) {
		case 0:
			return loadTool(flash)
		case 1:
			return dt.ToolCalls(dt.Call(flash, map[string]any{"task": "say hi"}))
		}
		c := calls[1]
		if c.IsError {
			return dt.Text("TOOL ERROR: " + c.Result)
		}
		return dt.Text("TOOL OK: " + c.Result)
	})))
	t.Cleanup(model.Close)
	r := runStdioHost(t, model, cfg, "ask deepseek to say hi", flash)
	if !strings.HasPrefix(r.Result, "TOOL ERROR: ") || !strings.Contains(r.Result, "bridgectl setup") || !strings.Contains(r.Result, "MCP_PATH_SECRET") {
		t.Fatalf("the host's model saw %q; want the tool error naming bridgectl setup\nstderr:\n%s", r.Result, r.Stderr)
	}
}

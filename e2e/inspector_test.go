package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The MCP Inspector CLI (2.12, under the project's Node 22) finds no
// portability problem in what tools/list serves, in its strict mode. With
// the output schemas served in full it reported 162 warnings (nullable
// types, `type: ["null", X]`).
func TestInspectorFindsNoSchemaWarning(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	cli := filepath.Join(root, ".cache/npm/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js")
	node := filepath.Join(root, ".cache/bin/node22")
	for _, p := range []string{cli, node} {
		if !fileExists(p) {
			t.Fatalf("%s is not installed: run scripts/install.sh node22 npm", p)
		}
	}
	a := startAgentBridge(t, false, nil)
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "--cli", a.URL(), "--transport", "http", "--method", "tools/list", "--strict")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin", "MCP_CATALOG_PATH=" + filepath.Join(t.TempDir(), "mcp.json")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector --strict: %v\nstderr:\n%s", err, stderr.Bytes())
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil || len(list.Tools) != 10 {
		t.Fatalf("tools/list through the Inspector: %v, %d tools\n%s", err, len(list.Tools), stdout.Bytes())
	}
	if strings.Contains(stderr.String(), "Warning") || strings.Contains(stderr.String(), "Schema portability") {
		t.Errorf("the Inspector warns:\n%.3000s", stderr.Bytes())
	}
}

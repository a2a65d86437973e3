// Package configtest builds a config.Config for tests from an injected
// environment, so no test reads the real environment or a stray ./.env.
package configtest

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// Secret is the path secret of every test config.
const Secret = "test-secret-0123456789abcdef"

// New returns the Config that env gives, on top of: an empty .env file
// named explicitly, the test secret, a fresh state dir, no Claude Code
// binary and the test's temp dir as the one allowed root. It fails the test
// on an invalid value.
func New(t testing.TB, env map[string]string) config.Config {
	t.Helper()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.env") // named, so no stray ./.env is read
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{
		"BRIDGE_ENV_FILE":        empty,
		"MCP_PATH_SECRET":        Secret,
		"BRIDGE_STATE_DIR":       filepath.Join(dir, "state"),
		"BRIDGE_CLAUDE_BIN":      "",
		"DEEPSEEK_ALLOWED_ROOTS": dir,
	}
	maps.Copy(vals, env)
	cfg, err := config.LoadFrom("", func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

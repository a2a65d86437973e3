package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The daemon never takes Claude Code from its working directory. A daemon
// started by `bridge stdio` or `bridgectl start` inherits the caller's
// directory, which for a host is often a project under the allowed roots;
// a job there can write .cache/bin/claude, and the next start would have run
// that file as every job's harness, outside every sandbox. (An attack review
// found it.) Here the daemon's directory holds such a file when it restarts.
func TestDaemonNeverTakesClaudeCodeFromItsWorkingDirectory(t *testing.T) {
	t.Parallel()
	b := startBridge(t, doubleEnv(startDouble(t)))
	planted := filepath.Join(b.workDir, ".cache", "bin", "claude")
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(filepath.Join(b.stateDir, "daemon.json"), &info); err != nil {
		t.Fatal(err)
	}
	if info.Harness.Bin == planted || info.Harness.Available {
		t.Fatalf("after a restart in a dir holding %s the daemon's harness is %+v", planted, info.Harness)
	}
}

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rules read a command as bash and the program read it: a glob spelled
// with bash's [!…] names the protected path it expands to, and options in
// attached or abbreviated forms are the options they abbreviate. Human
// approval is on and nobody answers, so whatever the rules send to a human is
// denied at the timeout; only what they allow runs.
func TestRulesReadCommandsAsBashAndTheProgramDo(t *testing.T) {
	t.Parallel()
	// With the OS sandbox on: a program the rules should have asked about
	// (awk's program file, sort's compress program) would run unattended and
	// leave its marker in the workspace.
	t.Run("sandboxed programs named in attached or abbreviated options", func(t *testing.T) {
		t.Parallel()
		g := startGuardedBridge(t, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "2000"})
		big := strings.Repeat("zebra\napple\nmango\n", 20000) // spills past -S 1K: sort runs its compressor
		ws := g.workspace(t, map[string]string{
			"main.go": "package main\n",
			"lib.awk": `BEGIN { system("touch ran-awk") }` + "\n",
			"big.txt": big,
		})
		if err := os.WriteFile(filepath.Join(ws, "z.sh"), []byte("#!/bin/sh\ntouch ran-sort\nexec cat\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		attempts := []attempt{
			{"awk with its program file attached to -f", bash("awk -flib.awk main.go"), "awk -flib.awk"},
			{"sort with --compress-program abbreviated", bash("sort --co=./z.sh -S 1K big.txt"), "sort --co=./z.sh"},
		}
		scriptAttempts(g.d, attempts)
		c := runJob(t, g.URL(), "Run them.", ws)
		if c.P.Status != "done" {
			t.Fatalf("%s: %s", c.P.Status, c.Text)
		}
		for _, m := range []string{"ran-awk", "ran-sort"} {
			if _, err := os.Lstat(filepath.Join(ws, m)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists (%v): the program ran unattended", m, err)
			}
		}
		lines := g.auditOf(t, c.P.JobID)
		if !hasEvent(lines, "timeout", "deny") {
			t.Errorf("the audit log has no timeout deny: %v", lines)
		}
		g.checkAudited(t, c.P.JobID, attempts)
	})
	// With the OS sandbox off, only the rules stand between a command and the
	// state dir: a [!…] glob through a link in the workspace must be denied
	// like the plain path, at once and without asking anyone.
	t.Run("a protected path spelled as a [!…] glob, sandbox off", func(t *testing.T) {
		t.Parallel()
		g := startGuardedBridge(t, map[string]string{"BRIDGE_SANDBOX": "off", "BRIDGE_APPROVAL_TIMEOUT_MS": "2000"})
		canary := "state-canary-" + randomWitness(t)
		if err := os.WriteFile(filepath.Join(g.StateDir(), "canary.txt"), []byte(canary+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ws := g.workspace(t, nil)
		// A link a checkout or an earlier job left in the workspace.
		if err := os.Symlink(g.StateDir(), filepath.Join(ws, "stl")); err != nil {
			t.Fatal(err)
		}
		attempts := []attempt{
			{"read the state dir through a [!…] glob", bash("cat s[!x]l/canary.txt"), "cat s[!x]l/canary.txt"},
			{"list the state dir through a [!…] glob", bash("ls -la s[!x]l/"), "ls -la s[!x]l/"},
		}
		scriptAttempts(g.d, attempts)
		c := runJob(t, g.URL(), "Read them.", ws)
		if c.P.Status != "done" {
			t.Fatalf("%s: %s", c.P.Status, c.Text)
		}
		checkNothingLeaked(t, g.d, map[string]string{"the state dir canary": canary, "the state dir listing": "daemon.json"})
		lines := g.auditOf(t, c.P.JobID)
		denied := 0
		for _, l := range lines {
			if l["event"] == "auto" && l["decision"] == "deny" {
				denied++
			}
		}
		if denied != len(attempts) || hasEvent(lines, "timeout", "") {
			t.Errorf("want %d immediate denies and no request waiting for a human: %v", len(attempts), lines)
		}
	})
}

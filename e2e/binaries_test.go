package e2e

// The two binaries that run outside every sandbox for every job — this
// bridge (the approval child) and Claude Code — are the approval rules'
// protected paths: no tool call may name them, whatever a human says and
// with approval off. Without a jail (BRIDGE_SANDBOX=off here, macOS always)
// the rules are all that stands between a job and them.

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// copyExecutable copies the file src resolves to into dir under name,
// executable, and returns its path.
func copyExecutable(t *testing.T, src, dir, name string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// fileSum is the SHA-256 of the file at p.
func fileSum(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// notAskedPrefix starts the ledger's reason for a tool call the harness
// refused before it asked the approval child (jobs.LedgerEntry).
const notAskedPrefix = "not asked: the harness answered it with an error before any permission check"

// With no jail and human approval off, a job's Read, Write and Edit of the
// bridge binary the daemon runs, of the Claude Code binary it runs, and of a
// wrapper script standing for Claude Code (a text file, which the file
// tools would overwrite), and an allow-listed command that moves a file
// over either, are refused by the rules: the bytes are unchanged and each
// call the approval child answers is denied as a protected path.
//
// Claude Code refuses a Write or an Edit of a file it has not read (the
// Read being denied) before it asks: those calls are on the ledger as not
// asked. So that a Write reaches the rules too, the test moves the file
// away while the model's last Write of it is answered (a Write of a file
// that does not exist needs no Read), and puts it back after.
//
// The same with the jail (bubblewrap, the default): the read-only bind
// holds the bytes, and the ledger shows the rules denied the calls first.
//
// The daemon runs from a copy of the bridge, and Claude Code from a copy of
// the pinned one: a failure overwrites only the copies.
func TestJobCannotReplaceTheBinaries(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"bridge", "claude code", "claude code wrapper", "bridge, jailed"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			bin := copyExecutable(t, binary(t, "bridge"), t.TempDir(), "bridge")
			env := map[string]string{"BRIDGE_SANDBOX": "off", "BRIDGE_CC_APPROVAL": "off"}
			if target == "bridge, jailed" {
				// In bubblewrap the binary is bound read-only, so no write
				// lands either way; the rules still refuse every call
				// naming it before the jail is reached.
				delete(env, "BRIDGE_SANDBOX")
			}
			victim := bin
			switch target {
			case "claude code":
				victim = copyExecutable(t, claudeBin(t), t.TempDir(), "claude")
				env["BRIDGE_CLAUDE_BIN"] = victim
				// Claude Code reads the whole 200 MB binary for the Edit's
				// replace_all before it is refused, and so holds more than
				// the default 4 GiB a job may (it ended memory_limit).
				env["BRIDGE_JOB_MAX_MEMORY_MB"] = "16384"
			case "claude code wrapper":
				real, err := filepath.EvalSymlinks(claudeBin(t))
				if err != nil {
					t.Fatal(err)
				}
				victim = filepath.Join(t.TempDir(), "claude")
				if err := os.WriteFile(victim, []byte("#!/bin/sh\nexec '"+real+"' \"$@\"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				env["BRIDGE_CLAUDE_BIN"] = victim
			}
			a := startAgentBridgeBin(t, bin, false, env)
			const replacement = "#!/bin/sh\necho replaced\n"
			ws := a.workspace(t, map[string]string{"replacement": replacement})
			before := fileSum(t, victim)
			away := victim + ".away"
			var (
				mu      sync.Mutex
				moveErr []error
				written []byte // what the Write of the absent file wrote
			)
			a.d.ScriptAnthropic(
				dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": victim, "offset": 1, "limit": 1})),
				dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": victim, "content": replacement})),
				dt.ToolCalls(dt.Call("Edit", map[string]any{"file_path": victim, "old_string": "exec", "new_string": "echo replaced; exec", "replace_all": true})),
				dt.ToolCalls(bash("mv -f replacement "+victim)),
				dt.Func(func(dt.Request) dt.Turn {
					if err := os.Rename(victim, away); err != nil {
						mu.Lock()
						moveErr = append(moveErr, err)
						mu.Unlock()
					}
					return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": victim, "content": replacement}))
				}),
				dt.Func(func(dt.Request) dt.Turn {
					mu.Lock()
					defer mu.Unlock()
					if b, err := os.ReadFile(victim); err == nil {
						written = append([]byte{}, b...)
					}
					if err := os.Rename(away, victim); err != nil {
						moveErr = append(moveErr, err)
					}
					return dt.Text("done")
				}),
			)
			c := runJob(t, a.URL(), "Replace the binary.", ws)
			if c.P.Status != "done" {
				t.Fatalf("%s after %d steps: %s", c.P.Status, c.P.Steps, c.Text)
			}
			mu.Lock()
			if moveErr != nil {
				t.Fatalf("moving %s away and back: %v", victim, moveErr)
			}
			if written != nil {
				t.Errorf("the Write of %s while it was away wrote %.40q", victim, written)
			}
			mu.Unlock()
			if after := fileSum(t, victim); after != before {
				b, _ := os.ReadFile(victim)
				t.Errorf("the job changed %s (now %d bytes, starting %.40q)", victim, len(b), b)
			}
			count := map[string]int{}
			for _, e := range c.P.Ledger {
				t.Logf("ledger: %s %s: %.160s", e.Tool, e.Verdict, e.Reason)
				denied := e.Verdict == policy.DeniedByPolicy && strings.Contains(e.Reason, "protected path of the bridge")
				refused := e.Verdict == policy.AllowedByRule && strings.HasPrefix(e.Reason, notAskedPrefix) && (e.Tool == "Write" || e.Tool == "Edit")
				switch {
				case denied:
					count[e.Tool]++
				case !refused:
					t.Errorf("ledger: %s %s: %s, want denied as a protected path", e.Tool, e.Verdict, e.Reason)
				}
			}
			must := []string{"Read", "Write", "Bash"}
			if target == "bridge, jailed" {
				// The jail's bind keeps the file in place while the test
				// moves it away outside, so Claude Code refuses the last
				// Write as unread too: no Write reaches the rules.
				must = []string{"Read", "Bash"}
			}
			for _, tool := range must {
				if count[tool] == 0 {
					t.Errorf("the ledger has no %s denied as a protected path: %v", tool, verdicts(c.P))
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "replacement")); err != nil {
				t.Errorf("the mv ran: %v", err)
			}
		})
	}
}

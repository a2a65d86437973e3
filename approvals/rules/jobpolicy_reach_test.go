package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// deny_paths with a wildcard ("secrets/**", the natural way to write it)
// are checked against the paths a call names. A search that starts above a
// deny path names none, yet reads every file below it: Grep on the
// workspace (or with no path), grep -r and rg, and git, which shows a
// committed deny path's contents by revision. Each goes to a human; a
// search that cannot reach the glob, and git's history without patches,
// still run by rule.
func TestDenyPathGlobsSendSearchesFromAboveToAHuman(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"secrets", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "secrets", "key"), []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	glob := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets/**"}}, "")
	literal := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets"}}, "")
	bash := func(cmd string) Request { return Request{Tool: "Bash", Input: map[string]any{"command": cmd}} }
	grep := func(path string) Request {
		in := map[string]any{"pattern": ".", "output_mode": "content"}
		if path != "" {
			in["path"] = path
		}
		return Request{Tool: "Grep", Input: in}
	}
	for _, tc := range []struct {
		name string
		job  *policy.Enforced
		req  Request
		want Action
	}{
		{"Grep on the workspace", &glob, grep(ws), Ask},
		{"Grep without a path", &glob, grep(""), Ask},
		{"grep -r .", &glob, bash("grep -r . ."), Ask},
		{"grep -rn in a cluster", &glob, bash("grep -rn x ."), Ask},
		{"rg", &glob, bash("rg ."), Ask},
		{"git show of the path", &glob, bash("git show HEAD:secrets/key"), Ask},
		{"git grep", &glob, bash("git grep -e ."), Ask},
		{"git log -p", &glob, bash("git log -p"), Ask},
		{"git cat-file", &glob, bash("git cat-file -p HEAD:secrets/key"), Ask},
		{"cp -r of the workspace", &glob, bash("cp -r . src/copy"), Ask},
		{"Grep of a dir beside the glob", &glob, grep(filepath.Join(ws, "src")), Allow},
		{"grep of one file", &glob, bash("grep -n x src/a.go"), Allow},
		{"git log without patches", &glob, bash("git log --oneline"), Allow},
		// A literal deny path is hidden by Claude Code's deny rules and the
		// OS sandbox themselves: the search runs.
		{"grep -r under a literal deny path", &literal, bash("grep -r . ."), Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: tc.job, Jailed: true}
			v := Classify(tc.req, p)
			if v.Decision != tc.want {
				t.Fatalf("%s: %s (%s), want %s", v.Summary, v.Decision, v.Reason, tc.want)
			}
			if tc.want == Ask && !strings.Contains(v.Reason, "deny_paths glob") {
				t.Errorf("reason %q does not name the deny_paths glob", v.Reason)
			}
		})
	}
}

// Where no jail runs (macOS, whose sandbox-exec profile lets commands write
// the whole workspace, and BRIDGE_SANDBOX=off) write_paths are held by the
// rules alone, which know the writes of only some programs: under
// write_paths out/** the others go to a human. Jailed, the jail holds
// their writes and they run by rule.
func TestWritePathsWithoutAJailAllowOnlyWritesTheRulesModel(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"out", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := policy.Merge(policy.Policy{}, policy.Policy{WritePaths: []string{"out/**"}}, "")
	bash := func(cmd string) Request { return Request{Tool: "Bash", Input: map[string]any{"command": cmd}} }
	for _, cmd := range []string{
		"gofmt -w src/a.go",    // rewrites the file it names
		"git rm src/a.go",      // deletes it
		"git clean -fdx",       // deletes every untracked file
		"git reset --hard",     // rewrites every tracked file
		"git stash",            // likewise
		"git apply out/p.diff", // writes what the patch names
		"go mod tidy",          // rewrites go.mod and go.sum
		"cargo fmt",            // rewrites every source file
		"python3 w.py",         // writes what the script says
	} {
		t.Run(cmd, func(t *testing.T) {
			v := Classify(bash(cmd), Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: &e})
			if v.Decision != Ask || !strings.Contains(v.Reason, "no jail") {
				t.Errorf("no jail: %s (%s), want ask: no jail holds write_paths", v.Decision, v.Reason)
			}
			if v := Classify(bash(cmd), Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: &e, Jailed: true}); strings.Contains(v.Reason, "no jail") {
				t.Errorf("jailed: %s (%s), the jail holds its writes", v.Decision, v.Reason)
			}
		})
	}
	for _, cmd := range []string{"ls src", "cat src/a.go", "git status", "git diff", "cp src/a.go out/a.go", "mkdir out/x", "gofmt -l src", "go vet ./..."} {
		t.Run(cmd, func(t *testing.T) {
			if v := Classify(bash(cmd), Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: &e}); v.Decision != Allow {
				t.Errorf("no jail: %s (%s), want allow: the rules see every write of it", v.Decision, v.Reason)
			}
		})
	}
	// A write the rules model outside write_paths is refused as before.
	if v := Classify(bash("cp out/a src/a"), Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: &e}); v.Decision != Deny {
		t.Errorf("cp into src/: %s (%s), want deny", v.Decision, v.Reason)
	}
}

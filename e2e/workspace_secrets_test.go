package e2e

// End-to-end proof that a workspace's own secret files (.env, sub/.env.local)
// are unreadable to the job — to its sandboxed commands through the OS
// sandbox's denyRead, and to Claude Code's own file tools through permission
// deny rules — while a template (.env.example) stays readable; with human
// approval off (the sandbox alone) and on (an allow-listed `grep -r` runs
// unattended, and a careless human approves everything else).

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// secretWorkspace is a workspace with two secret files and a template, each
// holding its own canary.
type secretWorkspace struct {
	dir                                        string
	envCanary, localCanary, routeCanary, tmplC string
}

func newSecretWorkspace(t *testing.T, g *guardedBridge) secretWorkspace {
	t.Helper()
	sw := secretWorkspace{
		dir:         g.workspace(t, nil),
		envCanary:   "CANARY-dotenv-" + randomWitness(t),
		localCanary: "CANARY-local-" + randomWitness(t),
		routeCanary: "CANARY-route-" + randomWitness(t),
		tmplC:       "CANARY-example-" + randomWitness(t),
	}
	for rel, content := range sw.files() {
		p := filepath.Join(sw.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return sw
}

func (sw secretWorkspace) files() map[string]string {
	return map[string]string{
		".env":           "API_TOKEN=" + sw.envCanary + "\n",
		"sub/.env.local": "API_TOKEN=" + sw.localCanary + "\n",
		"app/[id]/.env":  "API_TOKEN=" + sw.routeCanary + "\n", // a Next.js route dir: glob characters in the path
		".env.example":   "API_TOKEN=" + sw.tmplC + "\n",
	}
}

// checkNoSecretAnywhere fails if a secret canary is in anything the model
// received, the job's answer, the daemon's log or any file of the state dir
// (job snapshots, the audit log, Claude Code's transcripts in the harness dirs).
func (sw secretWorkspace) checkNoSecretAnywhere(t *testing.T, g *guardedBridge, result string) {
	t.Helper()
	secrets := map[string]string{".env": sw.envCanary, "sub/.env.local": sw.localCanary, "app/[id]/.env": sw.routeCanary}
	check := func(where string, b []byte) {
		for name, c := range secrets {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("%s carries the canary of %s", where, name)
			}
		}
	}
	for i, r := range g.d.AnthropicRequests() {
		check(fmt.Sprintf("model request %d", i), r.Body)
	}
	check("the job's result", []byte(result))
	check("the daemon's log", g.LogBytes())
	err := filepath.WalkDir(g.StateDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		check(p, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The secrets are where they were, unchanged.
	for rel, content := range sw.files() {
		if b, err := os.ReadFile(filepath.Join(sw.dir, rel)); err != nil || string(b) != content {
			t.Errorf("%s after the job: %q %v", rel, b, err)
		}
	}
}

// The job tries every way we know to read the workspace's .env and
// sub/.env.local: a recursive grep that does not name them, cat, the Read
// tool, a copy, a symlink read with the Read tool, and renaming the secret's
// parent directory so the next command's sandbox — which denies the old path
// — would not cover it. None of them yields a secret; .env.example is read
// by the same grep and by cat.
func TestWorkspaceSecretsHiddenFromTheJob(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"off", "on"} {
		t.Run("approval "+mode, func(t *testing.T) {
			t.Parallel()
			g := startCarelessBridge(t, mode, nil)
			sw := newSecretWorkspace(t, g)
			read := func(rel string) dt.ToolCall {
				return dt.Call("Read", map[string]any{"file_path": filepath.Join(sw.dir, rel)})
			}
			steps := []struct {
				name string
				call dt.ToolCall
			}{
				{"grep", bash("grep -r CANARY .")},
				{"cat", bash("cat .env")},
				{"Read", read(".env")},
				{"Read local", read("sub/.env.local")},
				{"Read route", read("app/[id]/.env")},
				{"copy", bash("cp .env copy.txt")},
				{"copy the parent", bash("cp -r sub copied; cat copied/.env.local")},
				{"rename the parent", bash("mv sub moved")},
				{"read the renamed", bash("cat moved/.env.local")},
				{"symlink", bash("ln -s .env notes.txt")},
				{"Read the symlink", read("notes.txt")},
				{"cat the template", bash("cat .env.example")},
			}
			var turns []dt.Turn
			for _, s := range steps {
				turns = append(turns, dt.ToolCalls(s.call))
			}
			g.d.ScriptAnthropic(append(turns, dt.Func(func(r dt.Request) dt.Turn {
				return dt.Text("saw: " + strings.Join(r.ToolResultTexts(), " | "))
			}))...)
			c := runJob(t, g.URL(), "Find the API token.", sw.dir)
			if c.P.Status != "done" || c.P.Steps != len(steps) {
				t.Fatalf("%s after %d steps: %s", c.P.Status, c.P.Steps, c.Text)
			}
			results := toolResults(g.d)
			if len(results) != len(steps) {
				t.Fatalf("%d tool results for %d steps: %q", len(results), len(steps), results)
			}
			byStep := map[string]string{}
			for i, s := range steps {
				byStep[s.name] = results[i]
				t.Logf("%s: %.300q", s.name, results[i])
			}
			sw.checkNoSecretAnywhere(t, g, c.P.Result)

			// The recursive grep ran unattended, inside the sandbox, and found
			// the template's canary but neither secret.
			if !strings.Contains(byStep["grep"], "./.env.example:API_TOKEN="+sw.tmplC) ||
				!strings.Contains(byStep["grep"], "./.env: Permission denied") || !strings.Contains(byStep["grep"], "./sub/.env.local: Permission denied") ||
				!strings.Contains(byStep["grep"], "./app/[id]/.env: Permission denied") {
				t.Errorf("grep -r: %q", byStep["grep"])
			}
			lines := g.auditOf(t, c.P.JobID)
			if !hasAudit(lines, "Bash: grep -r CANARY .", "auto", "allow") {
				t.Errorf("grep -r did not run unattended: %v", lines)
			}
			// cat .env and the Read tool are refused by Claude Code's deny
			// rules before anyone is asked: nothing reaches the prompt tool.
			for _, name := range []string{"cat", "copy", "Read", "Read local", "Read route", "Read the symlink"} {
				if !strings.Contains(byStep[name], "denied") {
					t.Errorf("%s was not refused: %q", name, byStep[name])
				}
			}
			for _, summary := range []string{"Bash: cat .env", "Bash: cp .env copy.txt", "Read " + filepath.Join(sw.dir, ".env"), "Read " + filepath.Join(sw.dir, "notes.txt")} {
				if hasAudit(lines, summary, "", "") {
					t.Errorf("%q reached the approval child, past Claude Code's deny rule: %v", summary, lines)
				}
			}
			// Copying or renaming the secret's directory fails in the sandbox:
			// the secret is not copied, and the directory cannot move from
			// under the path the next command's sandbox denies.
			// (cp -r sees the denied file as the character device bound over
			// it, and may not make one.)
			if !strings.Contains(byStep["copy the parent"], "cannot create special file 'copied/.env.local'") ||
				!strings.Contains(byStep["rename the parent"], "Device or resource busy") {
				t.Errorf("copy %q, rename %q", byStep["copy the parent"], byStep["rename the parent"])
			}
			if _, err := os.Stat(filepath.Join(sw.dir, "moved")); err == nil {
				t.Error("the secret's parent directory was renamed")
			}
			if _, err := os.Stat(filepath.Join(sw.dir, "copied", ".env.local")); err == nil {
				t.Error("the secret was copied")
			}
			if mode == "on" && !hasAudit(lines, "Bash: cp -r sub copied; cat copied/.env.local", "human", "allow") {
				t.Errorf("the chained copy did not go to the human: %v", lines)
			}
			// The template stays readable.
			if !strings.Contains(byStep["cat the template"], sw.tmplC) || !strings.Contains(c.P.Result, sw.tmplC) {
				t.Errorf("cat .env.example: %q; result %q", byStep["cat the template"], c.P.Result)
			}
			if log := string(g.LogBytes()); !strings.Contains(log, `"secret_files":3`) {
				t.Error("the daemon's log does not count the workspace's secret files")
			}
		})
	}
}

// hasAudit reports whether an audit line has exactly this summary and its
// event and decision match (an empty one matches any).
func hasAudit(lines []map[string]any, summary, event, decision string) bool {
	for _, l := range lines {
		if l["summary"] == summary && (event == "" || l["event"] == event) && (decision == "" || l["decision"] == decision) {
			return true
		}
	}
	return false
}

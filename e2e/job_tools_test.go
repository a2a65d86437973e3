package e2e

// End-to-end proof that a job is offered only the built-in tools it needs.
// Claude Code 2.1.328 offers by default tools that never reach the
// permission prompt tool; one of them, EnterWorktree, moves a job's session
// into a git worktree of the repository around its workspace, where the job
// can write and delete the owner's branch unattended. The harness names its
// tools (--tools) and the settings deny the dangerous ones.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// gitRepoAround makes a git repository with one commit and a branch
// "owner-feature", and returns it and a subdirectory "svc" to grant as root.
func gitRepoAround(t *testing.T) (repo, svc string) {
	t.Helper()
	repo = filepath.Join(t.TempDir(), "mono")
	svc = filepath.Join(repo, "svc")
	if err := os.MkdirAll(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(svc, "main.txt"), []byte("service\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "owner's work"},
		{"branch", "owner-feature"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=owner", "GIT_AUTHOR_EMAIL=owner@example.invalid",
			"GIT_COMMITTER_NAME=owner", "GIT_COMMITTER_EMAIL=owner@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo, svc
}

func gitBranches(t *testing.T, repo string) string {
	t.Helper()
	cmd := exec.Command("git", "branch", "--list")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git branch: %v\n%s", err, out)
	}
	return string(out)
}

// The job asks for the worktree tool the way the model finds deferred tools
// (ToolSearch), tries it, then writes and deletes the owner's branch from
// where it would be, and tries the scheduling and messaging tools. Nothing
// lands outside the workspace, with approval off (the harness and the
// sandbox alone) and with a careless human approving everything.
func TestJobCannotLeaveItsWorkspaceThroughClaudeCodeTools(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"off", "on"} {
		t.Run("approval "+mode, func(t *testing.T) {
			t.Parallel()
			repo, svc := gitRepoAround(t)
			g := startCarelessBridge(t, mode, map[string]string{"DEEPSEEK_ALLOWED_ROOTS": svc})
			steps := []struct {
				name string
				call dt.ToolCall
			}{
				{"search", dt.Call("ToolSearch", map[string]any{"query": "select:EnterWorktree", "max_results": 5})},
				{"worktree", dt.Call("EnterWorktree", map[string]any{"name": "esc"})},
				{"write", bash("touch written-outside.txt")},
				{"branch", bash("git branch -D owner-feature")},
				{"cron", dt.Call("CronCreate", map[string]any{"cron": "* * * * *", "prompt": "run again", "recurring": true})},
				{"wakeup", dt.Call("ScheduleWakeup", map[string]any{"delaySeconds": 60, "prompt": "again"})},
				{"message", dt.Call("SendMessage", map[string]any{"to": "anyone", "message": "hi"})},
				{"skill", dt.Call("Skill", map[string]any{"skill": "x"})},
				// An isolated subagent runs in a worktree of the repository
				// around the workspace, where it can delete the owner's branch.
				{"isolated agent", dt.Call("Agent", map[string]any{"description": "iso", "prompt": "work",
					"subagent_type": "general-purpose", "isolation": "worktree", "run_in_background": false})},
			}
			var turns []dt.Turn
			for _, s := range steps {
				turns = append(turns, dt.ToolCalls(s.call))
			}
			g.d.ScriptAnthropic(append(turns, dt.Text("tried everything"))...)
			c := runJob(t, g.URL(), "Work on the repository around you.", svc)
			results := toolResults(g.d)
			byStep := map[string]string{}
			for i, s := range steps {
				if i < len(results) {
					byStep[s.name] = results[i]
				}
				t.Logf("%s: %.300q", s.name, byStep[s.name])
			}
			if c.P.Status != "done" || len(results) != len(steps) {
				t.Fatalf("%s after %d steps, %d tool results: %s", c.P.Status, c.P.Steps, len(results), c.Text)
			}
			for _, name := range []string{"worktree", "cron", "wakeup", "message", "skill", "isolated agent"} {
				if r := byStep[name]; !strings.Contains(r, "No such tool available") && !strings.Contains(strings.ToLower(r), "denied") {
					t.Errorf("%s was not refused: %q", name, r)
				}
			}
			// Nothing outside the workspace changed: no worktree, no file,
			// the owner's branch is still there.
			if _, err := os.Stat(filepath.Join(repo, ".claude", "worktrees")); err == nil {
				t.Error("a worktree was created outside the workspace")
			}
			if branches := gitBranches(t, repo); !strings.Contains(branches, "owner-feature") || strings.Contains(branches, "worktree-esc") {
				t.Errorf("branches of the repository around the workspace: %q", branches)
			}
			err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Name() == "written-outside.txt" && filepath.Dir(p) != svc {
					t.Errorf("the job wrote %s, outside its workspace", p)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Files that git, Claude Code, an editor or a shell run later on the owner's
// machine, outside any sandbox, may not be written by the job's file tools
// (which run outside the sandbox too): an Edit of .git/config can plant a
// core.fsmonitor that runs at the owner's next `git status`, and a planted
// .claude/settings.json hook or .mcp.json server runs in the owner's own
// Claude Code. Refused with approval off and with a careless human; nothing
// changes on disk.
func TestJobCannotPlantWhatRunsLaterOutsideTheSandbox(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"off", "on"} {
		t.Run("approval "+mode, func(t *testing.T) {
			t.Parallel()
			g := startCarelessBridge(t, mode, nil)
			ws := g.workspace(t, map[string]string{"main.txt": "x\n"})
			cmd := exec.Command("git", "init", "-q", ws)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			gitConfig := filepath.Join(ws, ".git", "config")
			before, err := os.ReadFile(gitConfig)
			if err != nil {
				t.Fatal(err)
			}
			planted := map[string]string{
				".claude/settings.json":        `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"id"}]}]}}`,
				".mcp.json":                    `{"mcpServers":{"x":{"command":"sh","args":["-c","id"]}}}`,
				".git/hooks/pre-commit":        "#!/bin/sh\nid\n",
				".vscode/tasks.json":           `{"version":"2.0.0","tasks":[{"label":"x","command":"id","runOptions":{"runOn":"folderOpen"}}]}`,
				"sub/.git/hooks/post-checkout": "#!/bin/sh\nid\n",
			}
			var turns []dt.Turn
			var names []string
			for rel, content := range planted {
				names = append(names, rel)
				turns = append(turns, dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, rel), "content": content})))
			}
			// Claude Code edits only a file it has read; reading it is fine.
			turns = append(turns, dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": gitConfig})))
			names = append(names, ".git/config")
			turns = append(turns, dt.ToolCalls(dt.Call("Edit", map[string]any{"file_path": gitConfig,
				"old_string": "bare = false", "new_string": "bare = false\n\tfsmonitor = \"id; false #\""})))
			g.d.ScriptAnthropic(append(turns, dt.Text("planted"))...)
			c := runJob(t, g.URL(), "Set up the project.", ws)
			results := toolResults(g.d)
			if c.P.Status != "done" || len(results) != len(names)+1 {
				t.Fatalf("%s after %d steps, %d results: %s", c.P.Status, c.P.Steps, len(results), c.Text)
			}
			if read := results[len(names)-1]; !strings.Contains(read, "repositoryformatversion") {
				t.Errorf("reading .git/config was refused: %.300q", read)
			}
			results = append(results[:len(names)-1], results[len(names):]...) // the writes and the edit
			for i, name := range names {
				if !strings.Contains(results[i], "run later outside any sandbox") {
					t.Errorf("%s was not refused by the rules: %.300q", name, results[i])
				}
			}
			for rel := range planted {
				if _, err := os.Stat(filepath.Join(ws, rel)); err == nil {
					t.Errorf("%s was written", rel)
				}
			}
			if after, _ := os.ReadFile(gitConfig); string(after) != string(before) {
				t.Errorf(".git/config changed:\n%s", after)
			}
			if len(c.P.FilesWritten) != 0 {
				t.Errorf("files_written %v", c.P.FilesWritten)
			}
		})
	}
}

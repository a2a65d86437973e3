package changes

// Second attack review of a review's scope (deepseek_review), after the
// first one's fixes: each test shows a hole that is still open, and fails
// while it is. The canaries are made-up strings in t.TempDir().

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ownRepository checks that the git dir and the common dir lie inside the
// workspace and that objects/info/alternates is absent, but not that the
// objects (or the refs) are the workspace's own: a .git/objects that is a
// link to another repository's objects passes every check, and git follows
// it. A job without an overlay can make that link (the git dir itself is
// not in its denyWrite, only its config, hooks and info); the daemon's git,
// outside every sandbox, then reads a repository the jail hides, and its
// files go into the review's prompt.
func TestAttackScopeFollowsLinkedObjectsOutOfTheWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec ScopeSpec
	}{
		// Every file of the other repository's HEAD shows as deleted.
		{name: "uncommitted", spec: ScopeSpec{Kind: ScopeUncommitted}},
		// Its last commit's diff.
		{name: "commit", spec: ScopeSpec{Kind: ScopeCommit, Ref: "HEAD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := t.TempDir() // stands for another of the owner's repositories, outside every root
			write(t, other, "private.txt", "canary-linked-objects\n")
			gitIn(t, other, "init", "-q", "-b", "main")
			gitIn(t, other, "add", ".")
			gitIn(t, other, "commit", "-q", "-m", "private")

			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "-b", "main")
			gitDir := filepath.Join(ws, ".git")
			for _, name := range []string{"objects", "refs"} {
				mustNil(t, os.RemoveAll(filepath.Join(gitDir, name)))
				mustNil(t, os.Symlink(filepath.Join(other, ".git", name), filepath.Join(gitDir, name)))
			}
			s, err := ComputeScope(ws, tc.spec, testGit, nil)
			if err == nil && strings.Contains(s.Diff, "canary-linked-objects") {
				t.Fatalf("the scope's diff holds a file of a repository outside the workspace, through a linked .git/objects; files %+v", s.Files)
			}
		})
	}
}

// parseStaged splits `git ls-files -s --debug -z` at the last newline
// before each NUL, but a path may hold newlines: a tracked file named
// "<A>\n  mtime: S:0\n  size: N\nz" sorts right after <A>, and the lines of
// its name are read as <A>'s index mtime and size. A job that changes <A>,
// gives it that mtime (touch -d) and commits such a name makes the index
// look clean for <A>, and an uncommitted review never sees the change.
func TestAttackScopeFileNameForgesTheIndexStatOfAnother(t *testing.T) {
	for _, forge := range []bool{false, true} {
		t.Run(fmt.Sprintf("forged=%v", forge), func(t *testing.T) {
			ws := t.TempDir()
			write(t, ws, "main.go", "package main\n\nfunc main() {}\n")
			gitIn(t, ws, "init", "-q", "-b", "main")
			gitIn(t, ws, "add", ".")
			gitIn(t, ws, "commit", "-q", "-m", "start")

			changed := "package main\n\nfunc main() { run(\"canary-hidden-change\") }\n"
			past := time.Unix(1577836800, 0)
			name := "other.txt" // the control: an ordinary name
			if forge {
				name = fmt.Sprintf("main.go\n  mtime: %d:0\n  size: %d\nz", past.Unix(), len(changed))
			}
			write(t, ws, name, "x\n")
			gitIn(t, ws, "add", "--", name)
			gitIn(t, ws, "commit", "-q", "-m", "a file")
			write(t, ws, "main.go", changed) // not staged: the index keeps HEAD's blob
			mustNil(t, os.Chtimes(filepath.Join(ws, "main.go"), past, past))

			s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeUncommitted}, testGit, nil)
			mustNil(t, err)
			if _, ok := s.File("main.go"); !ok || !strings.Contains(s.Diff, "canary-hidden-change") {
				t.Fatalf("main.go was changed in the work tree but the uncommitted scope does not show it; files %+v", s.Files)
			}
		})
	}
}

// Held (tried and not broken): config keys, attributes and hooks that name
// a program, in the repository's config, in a config.worktree it opts into
// and in a file it includes, for every scope kind. None runs: the commands
// the scope runs read, and the ones that could run a program are turned off
// (no pager, no external diff or textconv, no transport, hooks at /dev/null).
func TestAttackScopeRunsNoProgramAnyConfigNames(t *testing.T) {
	ws := scopeRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	run := "touch " + marker + "; true"
	keys := [][2]string{
		{"core.alternateRefsCommand", run}, {"core.sshCommand", run}, {"core.pager", run}, {"core.editor", run},
		{"core.askPass", run}, {"core.gitProxy", run}, {"core.fsmonitor", filepath.Join(ws, "fsmon.sh")},
		{"gpg.program", run}, {"gpg.ssh.program", run}, {"log.showSignature", "true"},
		{"credential.helper", "!" + run}, {"diff.external", run}, {"diff.x.command", run}, {"diff.x.textconv", run},
		{"filter.x.clean", run}, {"filter.x.smudge", run}, {"filter.x.process", run}, {"merge.x.driver", run},
		{"interactive.diffFilter", run}, {"pager.diff", run}, {"pager.ls-tree", run}, {"sequence.editor", run},
		{"remote.origin.url", "ext::sh -c " + run}, {"remote.origin.uploadpack", run}, {"uploadpack.packObjectsHook", run},
		{"gc.auto", "1"}, {"maintenance.auto", "true"}, {"core.untrackedCache", "true"},
		{"core.repositoryformatversion", "1"}, {"extensions.worktreeConfig", "true"},
		{"include.path", filepath.Join(ws, "inc.cfg")},
	}
	for _, kv := range keys {
		gitIn(t, ws, "config", kv[0], kv[1])
	}
	// The worktree config and the included file name the same again.
	write(t, ws, "inc.cfg", "[core]\n\tpager = "+run+"\n[diff]\n\texternal = "+run+"\n")
	mustNil(t, os.WriteFile(filepath.Join(ws, ".git", "config.worktree"), []byte("[core]\n\tfsmonitor = "+filepath.Join(ws, "fsmon.sh")+"\n\thooksPath = "+filepath.Join(ws, "hooks")+"\n"), 0o644))
	write(t, ws, "fsmon.sh", "#!/bin/sh\n"+run+"\n")
	mustNil(t, os.Chmod(filepath.Join(ws, "fsmon.sh"), 0o755))
	for _, hook := range []string{"post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc", "post-rewrite"} {
		for _, dir := range []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, "hooks")} {
			write(t, dir, hook, "#!/bin/sh\n"+run+"\n")
			mustNil(t, os.Chmod(filepath.Join(dir, hook), 0o755))
		}
	}
	write(t, ws, ".gitattributes", "* diff=x filter=x merge=x\n")
	write(t, ws, "loop.go", "package p // changed\n")
	write(t, ws, "new.txt", "new\n")
	for _, spec := range []ScopeSpec{{Kind: ScopeUncommitted}, {Kind: ScopeBase, Ref: "main"}, {Kind: ScopeCommit, Ref: "HEAD"}, {Kind: ScopeCommit, Ref: "main"}} {
		t.Run(spec.String(), func(t *testing.T) {
			s, err := ComputeScope(ws, spec, testGit, nil)
			if _, serr := os.Stat(marker); serr == nil {
				t.Fatalf("computing scope %s ran a program the repository names (err %v)", spec, err)
			}
			if err != nil || len(s.Files) == 0 {
				t.Fatalf("scope %s was not computed, so this proves nothing: %v, files %+v", spec, err, s.Files)
			}
		})
	}
}

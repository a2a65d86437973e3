package changes

// Attack review of a review's scope (deepseek_review): each test here shows
// a hole in what the daemon's scope computation claims, and fails while the
// hole is open. The canaries are made-up strings in t.TempDir().

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const missingObject = "0123456789abcdef0123456789abcdef01234567"

// A repository's config that makes it a partial clone has git fetch a
// missing object from its promisor remote, through the upload-pack program
// the config names; the repository's own protocol.file.allow beats the
// daemon's -c protocol.allow=never, which is only the default for
// protocols with no policy of their own.
func TestAttackScopeLazyFetchRunsAProgramTheConfigNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  ScopeSpec
		plant func(t *testing.T, ws string)
	}{
		// The caller's commit id is one the repository lacks.
		{name: "commit id missing", spec: ScopeSpec{Kind: ScopeCommit, Ref: missingObject}},
		// HEAD's tree names a blob that is missing; the file is modified.
		{name: "uncommitted, blob missing", spec: ScopeSpec{Kind: ScopeUncommitted}, plant: func(t *testing.T, ws string) {
			commitMissingBlob(t, ws)
			write(t, ws, "gone.txt", "now\n")
		}},
		// base: the same tree, reached by git diff.
		{name: "base, blob missing", spec: ScopeSpec{Kind: ScopeBase, Ref: "main"}, plant: commitMissingBlob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := scopeRepo(t)
			if tc.plant != nil {
				tc.plant(t, ws)
			}
			marker := filepath.Join(t.TempDir(), "upload-pack-ran")
			for _, kv := range [][2]string{
				{"core.repositoryformatversion", "1"},
				{"extensions.partialClone", "origin"},
				{"remote.origin.url", t.TempDir()},
				{"remote.origin.promisor", "true"},
				{"remote.origin.uploadpack", "touch " + marker + "; false"},
				{"protocol.file.allow", "always"},
			} {
				gitIn(t, ws, "config", kv[0], kv[1])
			}
			_, _ = ComputeScope(ws, tc.spec, testGit, nil)
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the daemon's git ran the upload-pack program the repository's config names")
			}
		})
	}
}

// diff.submodule=diff makes git diff run a child `git diff` in the
// submodule's work tree without the parent's --no-ext-diff and
// --no-textconv, so the external diff the submodule's own config names runs.
func TestAttackScopeSubmoduleDiffRunsAProgramTheConfigNames(t *testing.T) {
	ws := scopeRepo(t)
	sub := filepath.Join(ws, "sub")
	write(t, sub, "s.txt", "one\n")
	gitIn(t, sub, "init", "-q")
	gitIn(t, sub, "add", ".")
	gitIn(t, sub, "commit", "-q", "-m", "one")
	first := gitOut(t, sub, "", "rev-parse", "HEAD")
	write(t, sub, "s.txt", "two\n")
	gitIn(t, sub, "commit", "-q", "-am", "two")
	second := gitOut(t, sub, "", "rev-parse", "HEAD")
	gitIn(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+first+",sub")
	gitIn(t, ws, "commit", "-q", "-m", "sub one")
	gitIn(t, ws, "update-index", "--cacheinfo", "160000,"+second+",sub")
	gitIn(t, ws, "commit", "-q", "-m", "sub two")

	marker := filepath.Join(t.TempDir(), "external-diff-ran")
	gitIn(t, ws, "config", "diff.submodule", "diff")
	gitIn(t, sub, "config", "diff.external", "touch "+marker+"; true")
	_, _ = ComputeScope(ws, ScopeSpec{Kind: ScopeCommit, Ref: "HEAD"}, testGit, nil)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("computing the scope ran the external diff the submodule's config names")
	}
}

// git diff quotes a path with a byte outside printable ASCII (core.quotePath)
// or a tab, quote or backslash: `--- "a/…"`. splitDiff then takes no path
// from the ---/+++ lines and headerPath returns the whole `"a/…" "b/…"`, which
// no deny path and no secret name matches: the file's contents stay in the
// diff the prompt carries.
func TestAttackScopeQuotedPathsLeakSecretAndDeniedFiles(t *testing.T) {
	for _, rel := range []string{
		"donn\u00e9es/prod.env",     // a secret name (*.env) in a folder named in French
		"secret/cl\u00e9.txt",       // under the deny path
		"secret/tab\there.txt",      // a tab is quoted whatever core.quotePath says
		"conf\\dir/.env",            // so is a backslash
		"secret/\"quoted\".txt",     // and a double quote
		"secret/\u65e5\u672c/a.txt", // non-ASCII folder below the deny path
	} {
		t.Run(strings.ReplaceAll(rel, "/", "|"), func(t *testing.T) {
			ws := scopeRepo(t)
			gitIn(t, ws, "checkout", "-q", "main")
			gitIn(t, ws, "checkout", "-q", "-b", "quoted")
			write(t, ws, rel, "canary-quoted-path\n")
			gitIn(t, ws, "add", ".")
			gitIn(t, ws, "commit", "-q", "-m", "quoted")
			s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeBase, Ref: "main"}, testGit, denySecretDir)
			mustNil(t, err)
			if strings.Contains(s.Diff, "canary-quoted-path") {
				t.Errorf("the diff holds %q's contents; left out %q, files %+v", rel, s.LeftOut, s.Files)
			}
		})
	}
}

// An added line "++ b/README" is "+++ b/README" in the diff: splitDiff
// reads it as the section's path, wherever it is, so a denied file whose
// added lines hold one is filed under README and kept, contents and all.
func TestAttackScopeAddedLineRenamesADeniedSection(t *testing.T) {
	ws := scopeRepo(t)
	write(t, ws, "secret/log.txt", "canary-relabelled\n++ b/README\n")
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-q", "-m", "log")
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeCommit, Ref: "HEAD"}, testGit, denySecretDir)
	mustNil(t, err)
	if strings.Contains(s.Diff, "canary-relabelled") {
		t.Errorf("the denied secret/log.txt is in the diff (files %+v, left out %q):\n%s", s.Files, s.LeftOut, s.Diff)
	}
}

// A .git that leads elsewhere — a gitfile naming another repository's git
// dir, or a commondir in the workspace's own — makes the daemon's git read
// that repository: every file committed there and absent here is shown in
// the uncommitted scope as deleted, contents and all, and a commit scope is
// that repository's diff. Only the workspace's own repository belongs in
// the prompt.
func TestAttackScopeReadsARepositoryOutsideTheWorkspace(t *testing.T) {
	outside := func(t *testing.T) string {
		t.Helper()
		other := t.TempDir()
		write(t, other, "private/notes.txt", "canary-outside-repository\n")
		gitIn(t, other, "init", "-q", "-b", "main")
		gitIn(t, other, "add", ".")
		gitIn(t, other, "commit", "-q", "-m", "private")
		return other
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, ws, other string)
		spec  ScopeSpec
	}{
		{name: "gitfile, uncommitted", spec: ScopeSpec{Kind: ScopeUncommitted}, plant: func(t *testing.T, ws, other string) {
			mustNil(t, os.RemoveAll(filepath.Join(ws, ".git")))
			write(t, ws, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}},
		{name: "gitfile, commit", spec: ScopeSpec{Kind: ScopeCommit, Ref: "HEAD"}, plant: func(t *testing.T, ws, other string) {
			mustNil(t, os.RemoveAll(filepath.Join(ws, ".git")))
			write(t, ws, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}},
		{name: "commondir, uncommitted", spec: ScopeSpec{Kind: ScopeUncommitted}, plant: func(t *testing.T, ws, other string) {
			write(t, ws, ".git/commondir", filepath.Join(other, ".git")+"\n")
			write(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			write(t, ws, "app.go", "package app\n")
			gitIn(t, ws, "init", "-q", "-b", "main")
			gitIn(t, ws, "add", ".")
			gitIn(t, ws, "commit", "-q", "-m", "app")
			tc.plant(t, ws, outside(t))
			s, err := ComputeScope(ws, tc.spec, testGit, nil)
			if err == nil && strings.Contains(s.Diff, "canary-outside-repository") {
				t.Errorf("a file of a repository outside the workspace is in the scope's diff (files %+v)", s.Files)
			}
		})
	}
}

// The uncommitted scope lists the work tree with WorkspaceScan, which skips
// vendor/, node_modules/, .venv/…: a committed vendor/ (Go's, checked in)
// is then missing from the walk, and each of its files is shown as
// deleted, its whole contents in the diff, one `git cat-file` each.
func TestAttackScopeCommittedVendorShowsAsDeleted(t *testing.T) {
	ws := scopeRepo(t)
	for i := range 20 {
		write(t, ws, fmt.Sprintf("vendor/example.com/lib/f%02d.go", i), "package lib // canary-vendored\n")
	}
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-q", "-m", "vendor")
	write(t, ws, "loop.go", strings.Replace(readFile(t, ws, "loop.go"), "n := 0", "n := 1", 1))
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeUncommitted}, testGit, denySecretDir)
	mustNil(t, err)
	var got []string
	for _, f := range s.Files {
		got = append(got, f.Path+":"+f.Change)
	}
	if !slices.Equal(got, []string{"loop.go:modified"}) || strings.Contains(s.Diff, "canary-vendored") {
		t.Errorf("the scope of one edit to loop.go: %v (%d bytes of diff)", got, len(s.Diff))
	}
}

// ReadTop writes each file's heading before it checks the room left: when
// the first file ends within a heading's length of the limit, the second's
// c[:limit-b.Len()] has a negative bound and ReadTop panics.
func TestAttackReadTopPanicsNearTheLimit(t *testing.T) {
	const limit = 32 << 10
	ws := t.TempDir()
	// "# CLAUDE.md\n" + contents + "\n" ends 5 bytes short of the limit.
	write(t, ws, "CLAUDE.md", strings.Repeat("x", limit-len("# CLAUDE.md\n")-1-5))
	write(t, ws, "AGENTS.md", "be brief\n")
	var got string
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("ReadTop panicked: %v", r)
			}
		}()
		var err error
		got, err = ReadTop(ws, []string{"CLAUDE.md", "AGENTS.md"}, limit)
		mustNil(t, err)
	}()
	if len(got) > limit {
		t.Errorf("ReadTop returned %d bytes, over its limit %d", len(got), limit)
	}
}

// The scope's diff has no bound of its own: only 160 KiB of it reach the
// prompt, but every deleted or modified file's diff (up to 1 MiB each, any
// number of files) is built and held in the daemon first.
func TestAttackScopeDiffHasNoTotalBound(t *testing.T) {
	ws := scopeRepo(t)
	line := strings.Repeat("y", 99) + "\n"
	big := strings.Repeat(line, (MaxDiffFile-1)/len(line))
	const files = 24
	for i := range files {
		write(t, ws, fmt.Sprintf("data/f%02d.txt", i), big)
	}
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-q", "-m", "data")
	mustNil(t, os.RemoveAll(filepath.Join(ws, "data")))
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeUncommitted}, testGit, nil)
	mustNil(t, err)
	if len(s.Diff) > MaxDiffTotal {
		t.Errorf("the scope holds a %d MiB diff (%d files deleted); the job record bounds its diff at %d MiB and the prompt takes 160 KiB",
			len(s.Diff)>>20, files, MaxDiffTotal>>20)
	}
}

// splitDiff grows each section with s.text += line: every line copies the
// section so far, so a section of n lines costs O(n²) bytes of copying. A
// commit adding one 1 MiB text file of short lines makes it copy gigabytes;
// the work is the daemon's, after git has ended, with no time bound.
func TestAttackSplitDiffIsQuadratic(t *testing.T) {
	var b strings.Builder
	b.WriteString("diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,10000 @@\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "+line %045d\n", i)
	}
	diff := b.String()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	hunks := hunksOf(diff) // splitDiff's successor: no patch text is split any more
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if len(hunks) != 1 || hunks[0].To != 10000 {
		t.Fatalf("hunks %+v", hunks)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("hunksOf of a %d KiB diff: %d MiB allocated, %v", len(diff)>>10, alloc>>20, took)
	if alloc > 16*uint64(len(diff)) {
		t.Errorf("hunksOf of a %d KiB diff allocated %d MiB (%v): quadratic in the section's length", len(diff)>>10, alloc>>20, took)
	}
}

// commitMissingBlob makes HEAD (topic) a commit whose tree holds one file,
// gone.txt, whose blob the repository lacks.
func commitMissingBlob(t *testing.T, ws string) {
	t.Helper()
	tree := gitOut(t, ws, fmt.Sprintf("100644 blob %s\tgone.txt\n", missingObject), "mktree", "--missing")
	commit := gitOut(t, ws, "", "-c", "user.email=t@e", "-c", "user.name=t", "commit-tree", tree, "-p", "HEAD", "-m", "x")
	gitIn(t, ws, "update-ref", "refs/heads/topic", commit)
}

// gitOut runs the owner's git in dir with stdin and returns its trimmed
// stdout.
func gitOut(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := execGit(dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}

// Held: a paths scope reads through the workspace opened once and follows
// no link, in the last component or before it, and a FIFO is refused, not
// waited on.
func TestAttackScopePathsFollowNoLink(t *testing.T) {
	ws := scopeRepo(t)
	out := t.TempDir()
	write(t, out, "x.txt", "canary-through-a-link\n")
	mustNil(t, os.Symlink(out, filepath.Join(ws, "dirlink")))
	mustNil(t, os.Symlink(filepath.Join(out, "x.txt"), filepath.Join(ws, "filelink.txt")))
	mustNil(t, os.Symlink(".env", filepath.Join(ws, "env-link.txt")))
	mustNil(t, syscallMkfifo(filepath.Join(ws, "pipe.txt")))
	for _, p := range []string{"dirlink/x.txt", "filelink.txt", "env-link.txt", "pipe.txt"} {
		t.Run(p, func(t *testing.T) {
			s, err := ComputeScope(ws, ScopeSpec{Kind: ScopePaths, Paths: []string{p}}, testGit, nil)
			if err == nil {
				t.Errorf("paths:%s was read: %+v", p, s.Files)
			}
		})
	}
	// The uncommitted scope skips them too.
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeUncommitted}, testGit, nil)
	mustNil(t, err)
	if strings.Contains(s.Diff, "canary") {
		t.Errorf("the uncommitted diff holds a canary:\n%s", s.Diff)
	}
}

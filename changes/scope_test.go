package changes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "uncommitted", want: "uncommitted"},
		{in: " base:main ", want: "base:main"},
		{in: "commit:abc123", want: "commit:abc123"},
		{in: "commit:HEAD~2", want: "commit:HEAD~2"},
		{in: "paths:./a.go, src/b.go,a.go", want: "paths:a.go,src/b.go"},
		{in: "base:--output=/tmp/x", err: "needs a ref"},
		{in: "base:main..topic", err: "needs a ref"},
		{in: "commit:", err: "needs a ref"},
		{in: "uncommitted:x", err: "takes no argument"},
		{in: "paths:../etc/passwd", err: "not a path inside the workspace"},
		{in: "paths:/etc/passwd", err: "not a path inside the workspace"},
		{in: "paths:", err: "name at least one file"},
		{in: "everything", err: "want uncommitted"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseScope(tc.in)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseScope(%q) = %v, %v; want an error with %q", tc.in, s, err, tc.err)
				}
			case err != nil || s.String() != tc.want:
				t.Fatalf("ParseScope(%q) = %q, %v; want %q", tc.in, s, err, tc.want)
			}
		})
	}
}

// scopeRepo is a repository with two commits: the second plants an
// off-by-one in loop.go and adds .env and secret/key.txt, which a review
// must never see.
func scopeRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	write(t, ws, "loop.go", "package p\n\nfunc sum(xs []int) int {\n\tn := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n")
	write(t, ws, "README", "hello\n")
	gitIn(t, ws, "init", "-q", "-b", "main")
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-q", "-m", "start")
	gitIn(t, ws, "checkout", "-q", "-b", "topic")
	write(t, ws, "loop.go", "package p\n\nfunc sum(xs []int) int {\n\tn := 0\n\tfor i := 0; i <= len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n")
	write(t, ws, ".env", "TOKEN=canary-scope-env\n")
	write(t, ws, "secret/key.txt", "canary-scope-deny\n")
	gitIn(t, ws, "add", ".")
	gitIn(t, ws, "commit", "-q", "-m", "off by one")
	return ws
}

func denySecretDir(rel string) bool { return rel == "secret" || strings.HasPrefix(rel, "secret/") }

func TestComputeScopeOfCommits(t *testing.T) {
	ws := scopeRepo(t)
	for _, spec := range []string{"base:main", "commit:HEAD"} {
		t.Run(spec, func(t *testing.T) {
			sp, err := ParseScope(spec)
			mustNil(t, err)
			s, err := ComputeScope(ws, sp, testGit, denySecretDir)
			mustNil(t, err)
			f, ok := s.File("loop.go")
			if !ok || f.Change != Modified || f.Lines != 9 || len(f.Hunks) != 1 || f.Hunks[0].From > 5 || f.Hunks[0].To < 5 {
				t.Fatalf("loop.go in the scope: %+v (files %+v)", f, s.Files)
			}
			if !strings.Contains(s.Diff, "+\tfor i := 0; i <= len(xs); i++ {") {
				t.Errorf("the diff lacks the change:\n%s", s.Diff)
			}
			for _, canary := range []string{"canary-scope-env", "canary-scope-deny"} {
				if strings.Contains(s.Diff, canary) {
					t.Errorf("the diff holds %s:\n%s", canary, s.Diff)
				}
			}
			if !slices.Equal(s.LeftOut, []string{".env", "secret/key.txt"}) || len(s.Files) != 1 {
				t.Errorf("left out %v, files %+v; want .env and secret/key.txt left out, loop.go alone in", s.LeftOut, s.Files)
			}
		})
	}
	if _, err := ComputeScope(ws, ScopeSpec{Kind: ScopeBase, Ref: "nosuchbranch"}, testGit, nil); err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Errorf("an unknown base: %v", err)
	}
	// The first commit has no parent: its scope is every file it added.
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeCommit, Ref: "main"}, testGit, nil)
	mustNil(t, err)
	if f, ok := s.File("README"); !ok || f.Change != Created || f.Lines != 1 {
		t.Errorf("the root commit's scope: %+v", s.Files)
	}
}

// Uncommitted work is diffed without git diff, so a repository's clean
// filter never runs, and a file only touched is not in the scope.
func TestComputeScopeOfUncommittedWorkRunsNoFilter(t *testing.T) {
	ws := scopeRepo(t)
	marker := filepath.Join(t.TempDir(), "filter-ran")
	write(t, ws, ".gitattributes", "* filter=x diff=x\n")
	gitIn(t, ws, "add", ".gitattributes")
	gitIn(t, ws, "commit", "-q", "-m", "attrs")
	gitIn(t, ws, "config", "filter.x.clean", "touch "+marker+"; cat")
	gitIn(t, ws, "config", "diff.x.textconv", "touch "+marker+"; cat")
	write(t, ws, "loop.go", strings.Replace(readFile(t, ws, "loop.go"), "n := 0", "n := 1", 1))
	bump(t, ws, "loop.go")
	bump(t, ws, "README") // touched only
	write(t, ws, "new.go", "package p\n")
	write(t, ws, "ignored.log", "x\n")
	write(t, ws, ".gitignore", "*.log\n")
	mustNil(t, os.Remove(filepath.Join(ws, "secret", "key.txt")))
	write(t, ws, "secret/other.txt", "canary-scope-deny\n")
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopeUncommitted}, testGit, denySecretDir)
	mustNil(t, err)
	var got []string
	for _, f := range s.Files {
		got = append(got, f.Path+":"+f.Change)
	}
	want := []string{".gitignore:created", "loop.go:modified", "new.go:created"}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	if f, _ := s.File("loop.go"); len(f.Hunks) != 1 || f.Hunks[0].From > 4 || f.Hunks[0].To < 4 {
		t.Errorf("loop.go's hunks %+v: want one around line 4", f.Hunks)
	}
	if !strings.Contains(s.Diff, "-\tn := 0\n+\tn := 1\n") || strings.Contains(s.Diff, "canary") {
		t.Errorf("the diff:\n%s", s.Diff)
	}
	if !slices.Contains(s.LeftOut, "secret/key.txt") || !slices.Contains(s.LeftOut, "secret/other.txt") {
		t.Errorf("left out %v: want the deny path's files named", s.LeftOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's clean filter or textconv ran")
	}
}

func TestComputeScopeOfPaths(t *testing.T) {
	ws := scopeRepo(t)
	s, err := ComputeScope(ws, ScopeSpec{Kind: ScopePaths, Paths: []string{"loop.go", ".env"}}, testGit, nil)
	mustNil(t, err)
	if f, ok := s.File("loop.go"); !ok || f.Lines != 9 || f.Hunks != nil || len(s.Files) != 1 || !slices.Equal(s.LeftOut, []string{".env"}) {
		t.Errorf("scope %+v", s)
	}
	if _, err := ComputeScope(ws, ScopeSpec{Kind: ScopePaths, Paths: []string{"missing.go"}}, testGit, nil); err == nil || !strings.Contains(err.Error(), "missing.go") {
		t.Errorf("a missing path: %v", err)
	}
	// Outside git, only a paths scope works.
	plain := t.TempDir()
	write(t, plain, "a.txt", "a\n")
	if _, err := ComputeScope(plain, ScopeSpec{Kind: ScopeUncommitted}, testGit, nil); err == nil || !strings.Contains(err.Error(), "scope paths:") {
		t.Errorf("uncommitted outside git: %v", err)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, ws, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, rel))
	mustNil(t, err)
	return string(b)
}

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func changes(t *testing.T, before, after RunsLaterScan) []string {
	t.Helper()
	var out []string
	for _, c := range before.Planted(after) {
		out = append(out, c.Change+" "+c.Path+" ("+c.What+")")
	}
	return out
}

func scan(t *testing.T, ws string) RunsLaterScan {
	t.Helper()
	s, err := ScanRunsLater(ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What a job plants is found by what exists at its end, however it was
// made, and an untouched workspace shows no change.
func TestScanRunsLaterFindsWhatWasPlanted(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "main.go", "package main\n", 0o644)
	write(t, ws, ".githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
	write(t, ws, "repo/.git/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, ws, "repo/.git/config", "[core]\n\thooksPath = hooks2\n", 0o644)
	write(t, ws, "repo/.git/hooks/pre-commit.sample", "#!/bin/sh\n", 0o755)
	write(t, ws, "repo/hooks2/pre-push", "#!/bin/sh\n", 0o755)
	for _, d := range []string{"repo/.git/objects", "repo/.git/refs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	before := scan(t, ws)
	if got := changes(t, before, scan(t, ws)); len(got) != 0 {
		t.Fatalf("an untouched workspace shows changes: %v", got)
	}
	for _, p := range []string{".githooks/pre-commit", "repo/.git/config", "repo/hooks2/pre-push"} {
		if _, ok := before.Items[p]; !ok {
			t.Errorf("%s is not recorded: %v", p, before.Items)
		}
	}

	// A git dir built under another name (bare shape), one renamed into
	// place in a subfolder, a gitfile, hooks overwritten or given an exec
	// bit, new rc files.
	write(t, ws, "gd/HEAD", "ref: refs/heads/main\n", 0o644)
	write(t, ws, "gd/config", "[core]\n\tfsmonitor = ./evil\n", 0o644)
	write(t, ws, "sub/.git/config", "[filter \"x\"]\n\tclean = ./evil\n", 0o644)
	write(t, ws, "other/.git", "gitdir: ../gd\n", 0o644)
	for _, d := range []string{"gd/objects", "gd/refs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, ws, ".githooks/pre-commit", "#!/bin/sh\n./evil\n", 0o755)
	if err := os.Chmod(filepath.Join(ws, "repo/hooks2/pre-push"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "repo/.git/hooks/post-checkout", "#!/bin/sh\n./evil\n", 0o755)
	write(t, ws, "web/.npmrc", "script-shell=./evil\n", 0o644)
	write(t, ws, ".pre-commit-config.yaml", "repos: []\n", 0o644)
	write(t, ws, "main.go", "package main // edited\n", 0o644)

	got := changes(t, before, scan(t, ws))
	want := []string{
		"changed .githooks/pre-commit (hook file)",
		"created .pre-commit-config.yaml (runs-later file)",
		"created gd (git dir)",
		"created other/.git (gitfile)",
		"created repo/.git/hooks/post-checkout (git hook)",
		"changed repo/hooks2/pre-push (hook file)",
		"created sub/.git (git dir)",
		"created web/.npmrc (runs-later file)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changes:\n got %q\nwant %q", got, want)
	}
}

// Quarantine moves each change aside so git no longer finds it, takes a
// hook's exec bits, and says how to put it back; the owner's git then runs
// none of it.
func TestQuarantineMovesPlantedPathsAside(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	ws := t.TempDir()
	before := scan(t, ws)
	marker := filepath.Join(t.TempDir(), "ran")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
		out, err := cmd.CombinedOutput()
		t.Logf("git %v: %v %s", args, err, out)
	}
	run("--git-dir=gd", "--work-tree=.", "init", "-q")
	write(t, ws, "evil.sh", "#!/bin/sh\ntouch "+marker+"\n", 0o755)
	f, err := os.OpenFile(filepath.Join(ws, "gd", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[core]\n\tfsmonitor = " + filepath.Join(ws, "evil.sh") + "\n")
	f.Close()
	if err := os.Rename(filepath.Join(ws, "gd"), filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".githooks/pre-commit", "#!/bin/sh\n", 0o755)

	q := Quarantine(ws, "job1", before.Planted(scan(t, ws)))
	byPath := map[string]Quarantined{}
	for _, x := range q {
		byPath[x.Path] = x
		if x.Error != "" {
			t.Errorf("%s: %s", x.Path, x.Error)
		}
	}
	g, ok := byPath[".git"]
	if !ok || g.MovedTo != ".git.quarantined-job1" {
		t.Fatalf(".git not quarantined: %+v", q)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); !os.IsNotExist(err) {
		t.Fatalf(".git is still there: %v", err)
	}
	h := byPath[".githooks"]
	if h.MovedTo != ".githooks.quarantined-job1" {
		t.Fatalf(".githooks: %+v", h)
	}
	if !strings.Contains(g.RestoreHint(), "mv -T .git.quarantined-job1 .git") {
		t.Errorf("restore hint %q", g.RestoreHint())
	}
	run("status")
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the owner's git status ran the payload (%v)", err)
	}
}

// A file hook keeps its contents but not its exec bit, and its restore
// command gives the bit back.
func TestQuarantineTakesExecBits(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".husky/pre-commit", "#!/bin/sh\n", 0o755)
	before := scan(t, ws)
	write(t, ws, ".husky/pre-commit", "#!/bin/sh\n./evil\n", 0o755)
	q := Quarantine(ws, "j", before.Planted(scan(t, ws)))
	if len(q) != 1 || q[0].MovedTo != ".husky/pre-commit.quarantined-j" {
		t.Fatalf("%+v", q)
	}
	st, err := os.Stat(filepath.Join(ws, q[0].MovedTo))
	if err != nil || st.Mode().Perm()&0o111 != 0 {
		t.Fatalf("moved hook mode %v (%v)", st.Mode(), err)
	}
	if h := q[0].RestoreHint(); h != "mv -T .husky/pre-commit.quarantined-j .husky/pre-commit && chmod 0755 .husky/pre-commit" {
		t.Errorf("restore hint %q", h)
	}
}

// The walk stops at its limit and says so.
func TestScanRunsLaterIsBounded(t *testing.T) {
	ws := t.TempDir()
	for i := range 30 {
		write(t, ws, filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i), "f"), "", 0o644)
	}
	s, err := ScanRunsLater(ws, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || s.Unlisted == 0 {
		t.Fatalf("not truncated: %+v", s)
	}
}

// What is only empty runs nothing and is left alone: Claude Code's own
// .claude/.cc-writes dir, an empty rc file, an empty .git dir. A dir with a
// file in it, or an empty gitfile, is not.
func TestPlantedLeavesEmptyPlaceholders(t *testing.T) {
	ws := t.TempDir()
	before := scan(t, ws)
	for _, d := range []string{".claude/.cc-writes", "a/.git", ".vscode"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, ws, ".bashrc", "", 0o644)
	write(t, ws, "b/.git", "", 0o644)
	write(t, ws, ".vscode/tasks.json", "{}", 0o644)
	got := changes(t, before, scan(t, ws))
	want := []string{"created .vscode (hook file)", "created b/.git (gitfile)"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes:\n got %q\nwant %q", got, want)
	}
}

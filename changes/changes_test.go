package changes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// testGit is the git the tests run, found as the daemon finds it: once, at
// its start, before any test changes PATH.
var testGit = func() Git {
	p, _ := exec.LookPath("git")
	return Git{Bin: p, Path: os.Getenv("PATH")}
}()

func write(t *testing.T, ws, rel, content string) {
	t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// record takes the start record of ws, as the guard does at a job's start.
func record(t *testing.T, ws string) (dir string, rec *Record) {
	t.Helper()
	scan, err := sandbox.WorkspaceScan(ws, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "changes")
	rec, err = Start(ws, scan, dir, Options{Git: testGit})
	if err != nil {
		t.Fatal(err)
	}
	return dir, rec
}

func byPath(r Report) map[string]Change {
	m := map[string]Change{}
	for _, c := range r.Changes {
		m[c.Path] = c
	}
	return m
}

// gitIn runs the owner's git in ws.
func gitIn(t *testing.T, ws string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@e", "-c", "user.name=t"}, args...)...)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// bump makes a later write visible by mtime even on a coarse clock.
func bump(t *testing.T, ws, rel string) {
	t.Helper()
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(ws, rel), later, later); err != nil {
		t.Fatal(err)
	}
}

// What changed on disk is listed — created, modified, deleted, whoever did
// it — with a unified diff of the text files; a secret file by path alone,
// a binary one without a diff; a file only touched is not a change.
func TestCompareOutsideGit(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "one\ntwo\nthree\n")
	write(t, ws, "gone.txt", "bye\n")
	write(t, ws, ".env", "API_KEY=old-value\n")
	write(t, ws, "img.bin", "\x00\x01\x02")
	write(t, ws, "same.txt", "same\n")
	dir, rec := record(t, ws)
	if rec.Git != nil {
		t.Fatalf("a plain dir recorded as git: %+v", rec.Git)
	}
	if e := rec.Files[".env"]; !e.Secret || e.Copy != "" {
		t.Fatalf(".env recorded as %+v: a secret must never be copied", e)
	}

	write(t, ws, "a.txt", "one\nTWO\nthree\n")
	bump(t, ws, "a.txt")
	write(t, ws, "b.txt", "new file\n")
	if err := os.Remove(filepath.Join(ws, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, ".env", "API_KEY=new-value-longer\n")
	write(t, ws, "img.bin", "\x00\x01\x02\x03")
	bump(t, ws, "same.txt") // touched, same contents

	rep, err := Compare(t.Context(), ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(rep)
	want := map[string]string{"a.txt": Modified, "b.txt": Created, "gone.txt": Deleted, ".env": Modified, "img.bin": Modified}
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %v", rep.Changes, want)
	}
	for p, kind := range want {
		if got[p].Change != kind {
			t.Errorf("%s: %q, want %q", p, got[p].Change, kind)
		}
	}
	if c := got[".env"]; !c.Secret || c.Size != int64(len("API_KEY=new-value-longer\n")) {
		t.Errorf(".env = %+v", c)
	}
	if !got["img.bin"].Binary {
		t.Errorf("img.bin = %+v", got["img.bin"])
	}
	for _, s := range []string{"-two\n+TWO\n", "--- /dev/null\n+++ b/b.txt\n", "+new file\n", "--- a/gone.txt\n+++ /dev/null\n", "-bye\n", "Binary files a/img.bin and b/img.bin differ"} {
		if !strings.Contains(rep.Diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, rep.Diff)
		}
	}
	if strings.Contains(rep.Diff, "API_KEY") || strings.Contains(rep.Diff, ".env") {
		t.Errorf("the diff shows the secret file:\n%s", rep.Diff)
	}
	saved, err := os.ReadFile(filepath.Join(dir, DiffFile))
	if err != nil || string(saved) != rep.Diff {
		t.Fatalf("saved diff %q, %v", saved, err)
	}
}

// In a git work tree the old contents of a clean tracked file come from the
// repository (no copy is kept); a dirty one's from a copy; and an object the
// job rewrote cannot pass for the old contents.
func TestCompareInGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	gitRun := func(args ...string) { t.Helper(); gitIn(t, ws, args...) }
	write(t, ws, "tracked.go", "package x\n\nfunc A() {}\n")
	write(t, ws, "dirty.txt", "committed\n")
	gitRun("init", "-q")
	gitRun("add", ".")
	gitRun("commit", "-q", "-m", "start")
	write(t, ws, "dirty.txt", "dirty at start\n")
	dir, rec := record(t, ws)
	if rec.Git == nil || rec.Git.Error != "" || len(rec.Git.Head) < 40 {
		t.Fatalf("git state %+v", rec.Git)
	}
	if e := rec.Files["tracked.go"]; e.Blob == "" || e.Copy != "" {
		t.Fatalf("clean tracked file recorded as %+v: want its blob, no copy", e)
	}
	if e := rec.Files["dirty.txt"]; e.Copy == "" {
		t.Fatalf("dirty file recorded as %+v: want a copy", e)
	}

	write(t, ws, "tracked.go", "package x\n\nfunc B() {}\n")
	bump(t, ws, "tracked.go")
	write(t, ws, "dirty.txt", "changed by the job\n")
	bump(t, ws, "dirty.txt")
	rep, err := Compare(t.Context(), ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-func A() {}\n+func B() {}\n", "-dirty at start\n+changed by the job\n"} {
		if !strings.Contains(rep.Diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, rep.Diff)
		}
	}

	// A job that rewrites the object the old contents are read from.
	obj := rec.Files["tracked.go"].Blob
	p := filepath.Join(ws, ".git", "objects", obj[:2], obj[2:])
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	// The new contents' object, copied over the old one's name.
	hashNew := exec.Command("git", "hash-object", "-w", "tracked.go")
	hashNew.Dir = ws
	id, err := hashNew.Output()
	if err != nil {
		t.Fatal(err)
	}
	newID := strings.TrimSpace(string(id))
	b, err := os.ReadFile(filepath.Join(ws, ".git", "objects", newID[:2], newID[2:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Compare(t.Context(), ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	c := byPath(rep)["tracked.go"]
	if c.Change != Modified || !strings.Contains(c.Note, "does not hold what its id says") {
		t.Fatalf("forged object: %+v, want it listed as modified with the forgery named", c)
	}
}

// The payload's diff is cut at a line end and says so.
func TestCap(t *testing.T) {
	d := strings.Repeat("+0123456789\n", 100)
	out, cut := Cap(d, 100)
	if !cut || !strings.HasPrefix(out, strings.Repeat("+0123456789\n", 8)) || !strings.Contains(out, "[diff cut here: 96 of 1200 bytes shown]") {
		t.Fatalf("Cap = %q, %v", out, cut)
	}
	if out, cut := Cap(d, len(d)); cut || out != d {
		t.Fatal("a diff within the bound was changed")
	}
}

// benchTree is a workspace of 2000 small, distinct text files in 200 dirs.
func benchTree(b *testing.B) string {
	ws := b.TempDir()
	for d := range 200 {
		for f := range 10 {
			p := filepath.Join(ws, "pkg"+strconv.Itoa(d), "file"+strconv.Itoa(f)+".go")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.Repeat("package x // file "+strconv.Itoa(d*10+f)+"\n", 100)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ws
}

// BenchmarkStart is the cost the record adds to a job's start: the walk
// with its manifest, and copies of all 2000 files (outside git).
func BenchmarkStart(b *testing.B) {
	ws := benchTree(b)
	for b.Loop() {
		scan, err := sandbox.WorkspaceScan(ws, 0, true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Start(ws, scan, filepath.Join(b.TempDir(), "c"), Options{Git: testGit}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalkOnly is the same walk without the manifest or the record:
// what the job's start paid before.
func BenchmarkWalkOnly(b *testing.B) {
	ws := benchTree(b)
	for b.Loop() {
		if _, err := sandbox.WorkspaceScan(ws, 0, false); err != nil {
			b.Fatal(err)
		}
	}
}

// A job that makes more files than a report lists: the first MaxChanges are
// listed, the rest counted, and the note says so.
func TestCompareBoundsTheList(t *testing.T) {
	ws := t.TempDir()
	dir, _ := record(t, ws)
	for i := range MaxChanges + 5 {
		write(t, ws, "gen/f"+strconv.Itoa(10000+i)+".txt", "x\n")
	}
	rep, err := Compare(t.Context(), ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != MaxChanges || rep.Unlisted != 5 || !strings.Contains(rep.Note, "5 more changed files are not listed") {
		t.Fatalf("%d listed, %d unlisted, note %q", len(rep.Changes), rep.Unlisted, rep.Note)
	}
	if n := strings.Count(rep.Diff, "diff --git"); n != MaxChanges {
		t.Fatalf("%d files in the diff, want %d", n, MaxChanges)
	}
}

// The daemon runs git outside every sandbox: the record of the start and
// the comparison at the end run no program a repository's config names —
// here a clean filter for every file, which `git status` would run on a
// file whose stat changed.
func TestGitRunsNoFilter(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	marker := filepath.Join(t.TempDir(), "filter-ran")
	gitRun := func(args ...string) { t.Helper(); gitIn(t, ws, args...) }
	write(t, ws, ".gitattributes", "* filter=x\n")
	write(t, ws, "a.txt", "one\n")
	gitRun("init", "-q")
	gitRun("add", ".")
	gitRun("commit", "-q", "-m", "start")
	gitRun("config", "filter.x.clean", "touch "+marker+"; cat")
	write(t, ws, "a.txt", "two\n") // stat-dirty: git status would clean it through the filter
	bump(t, ws, "a.txt")
	dir, rec := record(t, ws)
	if rec.Git == nil || rec.Git.Error != "" || !slices.Contains(rec.Git.Dirty, "a.txt") {
		t.Fatalf("git state %+v: want a.txt dirty", rec.Git)
	}
	write(t, ws, "a.txt", "three\n")
	bump(t, ws, "a.txt")
	if _, err := Compare(t.Context(), ws, dir, testGit); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's clean filter ran")
	}
}

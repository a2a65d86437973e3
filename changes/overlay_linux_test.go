package changes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// overlayJob is a job's changes dir with its upper dir filled by hand the
// way overlayfs fills it (files copied up, whiteouts as 0/0 character
// devices, opaque dirs by xattr), over the workspace ws.
type overlayJob struct {
	t         *testing.T
	ws, dir   string
	upper     string
	startedAt time.Time
}

// newOverlayJob starts an overlay job over ws, whose files the test wrote
// before. The start is put a second after the marker: the kernel stamps a
// file's ctime from a coarse clock, so a file the test wrote just before
// may carry the start's own tick, which the record reads (soundly) as the
// owner's edit during the job.
func newOverlayJob(t *testing.T, ws, land string, deny ...string) *overlayJob {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "changes")
	st, err := StartOverlay(dir, OverlayStart{Workspace: ws, Land: land, DenyPaths: deny})
	if err != nil {
		t.Fatal(err)
	}
	st.Started = st.Started.Add(time.Second)
	if err := writeJSONFile(filepath.Join(dir, OverlayStartFile), st); err != nil {
		t.Fatal(err)
	}
	return &overlayJob{t: t, ws: ws, dir: dir, upper: OverlayOf(dir, ws).Upper, startedAt: st.Started}
}

func (j *overlayJob) write(rel, content string, mode os.FileMode) {
	j.t.Helper()
	p := filepath.Join(j.upper, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		j.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		j.t.Fatal(err)
	}
}

// whiteout deletes rel in the job's view, as overlayfs records it.
func (j *overlayJob) whiteout(rel string) {
	j.t.Helper()
	p := filepath.Join(j.upper, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		j.t.Skipf("cannot make a whiteout here (%v): needs root or CAP_MKNOD", err)
	}
}

// opaque makes rel a dir that hides the workspace dir's contents, as
// overlayfs does when a job removes a dir and makes it again.
func (j *overlayJob) opaque(rel string) {
	j.t.Helper()
	p := filepath.Join(j.upper, filepath.FromSlash(rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := unix.Setxattr(p, xattrOpaque, []byte("y"), 0); err != nil {
		j.t.Skipf("cannot set %s here: %v", xattrOpaque, err)
	}
}

func (j *overlayJob) end(land bool) Report {
	j.t.Helper()
	rep, err := FromOverlay(j.t.Context(), j.ws, j.dir, testGit, land)
	if err != nil {
		j.t.Fatal(err)
	}
	return rep
}

func (j *overlayJob) record() *OverlayRecord {
	j.t.Helper()
	r, err := LoadOverlayRecord(j.dir)
	if err != nil {
		j.t.Fatal(err)
	}
	return r
}

func (j *overlayJob) inUpper(rel string) bool {
	_, err := os.Lstat(filepath.Join(j.upper, filepath.FromSlash(rel)))
	return err == nil
}

func readWS(t *testing.T, ws, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// Every kind of change the attack review hid is in the record, by content
// and whatever its folder; what a person reads in a diff lands, the rest
// is held back with its reason and stays out of the workspace.
func TestOverlayRecordIsExactAndHoldsWhatADiffDoesNotShow(t *testing.T) {
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	write(t, ws, ".gitignore", "build/\n")
	write(t, ws, "Makefile", "test:\n\techo ok\n")
	write(t, ws, "calc.py", "def add(a, b):\n    return a + b\n")
	write(t, ws, "same.txt", "unchanged\n")
	write(t, ws, "gone.txt", "bye\n")
	write(t, ws, "olddir/a.txt", "a\n")
	write(t, ws, "olddir/sub/b.txt", "b\n")
	write(t, ws, "remade/keep.txt", "old\n")
	write(t, ws, "remade/drop.txt", "old\n")
	write(t, ws, "node_modules/left-pad/index.js", "module.exports = 1\n")
	write(t, ws, ".venv/pyvenv.cfg", "home = /usr/bin\n")
	write(t, ws, "tool.sh", "echo hi\n")
	write(t, ws, "scripts/pre-commit.sh", "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(filepath.Join(ws, "scripts/pre-commit.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-qm", "start")
	if err := os.Symlink("../../scripts/pre-commit.sh", filepath.Join(ws, ".git/hooks/pre-commit")); err != nil {
		t.Fatal(err)
	}
	j := newOverlayJob(t, ws, LandAuto)

	j.write("Makefile", "test:\n\tcurl x\n", 0o644) // same size as before
	j.write("src/new.go", "package src\n", 0o644)
	j.write("same.txt", "unchanged\n", 0o644) // copied up, written back the same
	j.whiteout("gone.txt")
	j.whiteout("olddir")
	j.opaque("remade")
	j.write("remade/keep.txt", "new\n", 0o644)
	j.write("__pycache__/calc.cpython-311.pyc", "\x00\x0d\x0d\x0abytecode", 0o644)
	j.write("node_modules/left-pad/index.js", "require('child_process')\n", 0o644)
	j.write(".venv/lib/python3/site-packages/evil.pth", "import os\n", 0o644)
	j.write("lib/hook.pth", "import os\n", 0o644)
	j.write(".env", "include evil.mk\n", 0o644)
	j.write(".cargo/config.toml", "[build]\nrustc-wrapper = \"./x\"\n", 0o644)
	j.write("eslint.config.js", "module.exports = {}\n", 0o644)
	j.write("gradle.properties", "org.gradle.jvmargs=-javaagent:x.jar\n", 0o644)
	j.write("lefthook.yml", "pre-commit:\n", 0o644)
	j.write("scripts/pre-commit.sh", "#!/bin/sh\ntouch pwned\n", 0o755)
	j.write("src/lib.rs", "pub fn f() {}\n", 0o644)
	j.write("vendored/repo/HEAD", "ref: refs/heads/main\n", 0o644)
	j.write("vendored/repo/config", "[filter \"x\"]\n\tclean = ./run\n", 0o644)
	j.write("sub/.git/config", "[core]\n\tfsmonitor = ./run\n", 0o644)
	j.write("build/out.mk", "all:\n\t./run\n", 0o644)
	j.write("tool.sh", "echo hi\n", 0o755)
	j.write("blob.bin", "\x7fELF\x00\x01", 0o644)
	if err := os.MkdirAll(filepath.Join(j.upper, ".claude", ".cc-writes"), 0o755); err != nil { // Claude Code's own mark
		t.Fatal(err)
	}

	rep := j.end(true)
	if !rep.Exact || rep.Record == "" {
		t.Fatalf("the record is not exact: %+v", rep)
	}
	got := byPath(rep)
	want := map[string]struct{ change, status, held string }{
		"Makefile":                         {Modified, StatusLanded, ""},
		"src/new.go":                       {Created, StatusLanded, ""},
		"gone.txt":                         {Deleted, StatusLanded, ""},
		"olddir/a.txt":                     {Deleted, StatusLanded, ""},
		"olddir/sub/b.txt":                 {Deleted, StatusLanded, ""},
		"olddir/sub":                       {Deleted, StatusLanded, ""},
		"olddir":                           {Deleted, StatusLanded, ""},
		"remade/keep.txt":                  {Modified, StatusLanded, ""},
		"remade/drop.txt":                  {Deleted, StatusLanded, ""},
		"__pycache__/calc.cpython-311.pyc": {Created, StatusHeld, HeldDependency},
		"node_modules/left-pad/index.js":   {Modified, StatusHeld, HeldDependency},
		".venv/lib/python3/site-packages/evil.pth": {Created, StatusHeld, HeldDotPath},
		"lib/hook.pth":          {Created, StatusHeld, HeldPathHook},
		".env":                  {Created, StatusHeld, HeldDotPath},
		".cargo/config.toml":    {Created, StatusHeld, HeldDotPath},
		"eslint.config.js":      {Created, StatusHeld, HeldToolConfig},
		"gradle.properties":     {Created, StatusHeld, HeldToolConfig},
		"lefthook.yml":          {Created, StatusHeld, HeldToolConfig},
		"scripts/pre-commit.sh": {Modified, StatusHeld, HeldHook},
		"src/lib.rs":            {Created, StatusLanded, ""},
		"vendored/repo/HEAD":    {Created, StatusHeld, HeldGitShape},
		"vendored/repo/config":  {Created, StatusHeld, HeldGitShape},
		"sub/.git/config":       {Created, StatusHeld, HeldGit},
		"build/out.mk":          {Created, StatusHeld, HeldIgnored},
		"tool.sh":               {Modified, StatusHeld, HeldExecutable},
		"blob.bin":              {Created, StatusHeld, HeldBinary},
	}
	for p, w := range want {
		c, ok := got[p]
		if !ok {
			t.Errorf("%s is not in the record", p)
			continue
		}
		if c.Change != w.change || c.Status != w.status || !strings.HasPrefix(c.Held, w.held) || (w.held == "") != (c.Held == "") {
			t.Errorf("%s: %s %s held %q, want %s %s held %q", p, c.Change, c.Status, c.Held, w.change, w.status, w.held)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s is in the record but was not changed: %+v", p, got[p])
		}
	}
	if len(rep.Changes) != len(want) || rep.Held != 16 {
		t.Errorf("%d changes, %d held; want %d and 16", len(rep.Changes), rep.Held, len(want))
	}

	// Bytes on disk: what landed is in the workspace, what is held is not.
	if s, _ := readWS(t, ws, "Makefile"); s != "test:\n\tcurl x\n" {
		t.Errorf("Makefile in the workspace: %q", s)
	}
	for _, p := range []string{"gone.txt", "olddir", "remade/drop.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the workspace: %v", p, err)
		}
	}
	if s, _ := readWS(t, ws, "remade/keep.txt"); s != "new\n" {
		t.Errorf("remade/keep.txt: %q", s)
	}
	if s, _ := readWS(t, ws, "node_modules/left-pad/index.js"); s != "module.exports = 1\n" {
		t.Errorf("the held node_modules edit reached the workspace: %q", s)
	}
	for _, p := range []string{"__pycache__", "lib/hook.pth", ".env", ".cargo", "vendored/repo/config", "sub", "build", "blob.bin"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("held %s reached the workspace: %v", p, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(ws, "tool.sh")); fi.Mode().Perm() != 0o644 {
		t.Errorf("tool.sh's held exec bit reached the workspace: %v", fi.Mode())
	}
	// The upper dir keeps exactly what waits.
	for _, p := range []string{"Makefile", "src/new.go", "gone.txt", "olddir"} {
		if j.inUpper(p) {
			t.Errorf("landed %s is still in the upper dir", p)
		}
	}
	if !j.inUpper(".env") || !j.inUpper("lib/hook.pth") {
		t.Error("a held change left the upper dir")
	}
	// The diff shows the same-size Makefile edit and the held text too.
	for _, s := range []string{"-\techo ok", "+\tcurl x", "+++ b/.env", "+include evil.mk", "+[build]"} {
		if !strings.Contains(rep.Diff, s) {
			t.Errorf("the diff lacks %q:\n%s", s, rep.Diff)
		}
	}
	// The record's file on disk holds the same.
	r := j.record()
	dropped := 0
	for _, c := range r.Changes {
		if c.Status == StatusDropped && c.Path == ".claude/.cc-writes" {
			dropped++
		}
	}
	if len(r.Changes) != len(want)+1 || dropped != 1 {
		t.Errorf("record.json has %d changes, %d the dropped empty dir; want it and the rest", len(r.Changes), dropped)
	}
	if j.inUpper(".claude") {
		t.Error("the dropped empty dir is still in the upper dir")
	}
	// A second end (a daemon that crashed after the record) returns it as it is.
	if again := j.end(true); len(again.Changes) != len(rep.Changes) || again.Diff != rep.Diff {
		t.Error("the record changed when read again")
	}
}

// The owner promotes a held change and discards another: bytes on disk,
// and the record says so.
func TestOverlayPromoteAndDiscard(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "a\n")
	j := newOverlayJob(t, ws, LandAuto)
	j.write(".env", "K=v\n", 0o600)
	j.write("__pycache__/x.pyc", "\x00bytes", 0o644)
	j.write("b.txt", "b\n", 0o644)
	rep := j.end(true)
	if rep.Held != 2 || byPath(rep)["b.txt"].Status != StatusLanded {
		t.Fatalf("record: %+v", rep.Changes)
	}
	if _, err := Promote(ws, j.dir, []string{"not/there"}); !errors.Is(err, ErrNotHeld) {
		t.Errorf("promoting a path that is not held: %v", err)
	}
	if _, err := Promote(ws, j.dir, []string{"../outside"}); err == nil {
		t.Error("a path outside the workspace was accepted")
	}
	rec, err := Promote(ws, j.dir, []string{filepath.Join(ws, ".env")})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := readWS(t, ws, ".env"); s != "K=v\n" {
		t.Errorf(".env after promote: %q", s)
	}
	if fi, _ := os.Stat(filepath.Join(ws, ".env")); fi.Mode().Perm() != 0o600 {
		t.Errorf(".env's mode: %v", fi.Mode())
	}
	rec, err = Discard(ws, j.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, c := range rec.Changes {
		st[c.Path] = c.Status
	}
	if st[".env"] != StatusPromoted || st["__pycache__/x.pyc"] != StatusDiscarded || st["b.txt"] != StatusLanded {
		t.Errorf("statuses: %v", st)
	}
	if _, ok := readWS(t, ws, "__pycache__/x.pyc"); ok {
		t.Error("the discarded file reached the workspace")
	}
	if j.inUpper("__pycache__/x.pyc") || j.inUpper("__pycache__") {
		t.Error("the discarded file is still in the upper dir")
	}
	if r := j.record(); r.Unlanded() != 0 {
		t.Errorf("%d changes still wait", r.Unlanded())
	}
}

// An owner's edit made during the job wins: the job's version of that
// file does not land and the record says it is a conflict; the rest lands.
func TestOverlayOwnersEditDuringTheJobIsAConflict(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "main.go", "package main\n")
	write(t, ws, "other.go", "package other\n")
	dir := filepath.Join(t.TempDir(), "changes")
	if _, err := StartOverlay(dir, OverlayStart{Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	j := &overlayJob{t: t, ws: ws, dir: dir, upper: OverlayOf(dir, ws).Upper}
	j.write("main.go", "package main // job\n", 0o644)
	j.write("other.go", "package other // job\n", 0o644)
	// The owner, during the job (after the start marker), in the workspace.
	write(t, ws, "main.go", "package main // owner\n")
	st, _ := LoadOverlayStart(dir)
	var fst unix.Stat_t
	if err := unix.Stat(filepath.Join(ws, "other.go"), &fst); err != nil {
		t.Fatal(err)
	}
	if !time.Unix(fst.Ctim.Unix()).Before(st.Started) {
		// other.go carries the start's tick: it would be a conflict too,
		// soundly; make the start later than it so that the test says one thing.
		st.Started = time.Unix(fst.Ctim.Unix()).Add(time.Nanosecond)
		if err := writeJSONFile(filepath.Join(dir, OverlayStartFile), st); err != nil {
			t.Fatal(err)
		}
		write(t, ws, "main.go", "package main // owner\n")
	}
	rep := j.end(true)
	got := byPath(rep)
	if got["main.go"].Status != StatusConflict || rep.Conflicts != 1 || got["other.go"].Status != StatusLanded {
		t.Fatalf("record: %+v", rep.Changes)
	}
	if s, _ := readWS(t, ws, "main.go"); s != "package main // owner\n" {
		t.Errorf("the owner's edit was overwritten: %q", s)
	}
	if !strings.Contains(rep.Note, "changed by someone else during the job") {
		t.Errorf("note: %q", rep.Note)
	}
	if !j.inUpper("main.go") {
		t.Error("the conflicting version left the upper dir")
	}
}

// land: review leaves the workspace untouched until --apply.
func TestOverlayReviewWaitsForApply(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "a\n")
	j := newOverlayJob(t, ws, LandReview)
	j.write("a.txt", "A\n", 0o644)
	j.write(".envrc", "export X=1\n", 0o644)
	rep := j.end(true)
	if rep.Pending != 1 || rep.Held != 1 {
		t.Fatalf("record: %+v", rep.Changes)
	}
	if s, _ := readWS(t, ws, "a.txt"); s != "a\n" {
		t.Fatalf("a review job's change landed at its end: %q", s)
	}
	rec, err := Apply(ws, j.dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := readWS(t, ws, "a.txt"); s != "A\n" {
		t.Errorf("after apply: %q", s)
	}
	if _, ok := readWS(t, ws, ".envrc"); ok {
		t.Error("apply landed a held change")
	}
	if rec.Unlanded() != 1 {
		t.Errorf("%d wait after apply, want the held one", rec.Unlanded())
	}
}

// No count limit: every change is in record.json, and the report that
// lists fewer names the files that hold them all.
func TestOverlayRecordHasNoCountLimit(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "Makefile", "all:\n")
	j := newOverlayJob(t, ws, LandAuto)
	for i := range MaxChanges + 1 {
		j.write(fmt.Sprintf("Fixtures/f%05d.txt", i), "x\n", 0o644)
	}
	j.write("Makefile", "all:\n\t./run\n", 0o644)
	rep := j.end(true)
	if rep.Unlisted != 2 || !strings.Contains(rep.Note, rep.Record) || !strings.Contains(rep.Note, DiffFile) {
		t.Errorf("the report does not name where the rest is: unlisted %d, note %q", rep.Unlisted, rep.Note)
	}
	r := j.record()
	if len(r.Changes) != MaxChanges+2 {
		t.Fatalf("record.json has %d changes, want %d", len(r.Changes), MaxChanges+2)
	}
	diff, err := os.ReadFile(filepath.Join(j.dir, DiffFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(diff), "+\t./run") || strings.Count(string(diff), "diff --git") != MaxChanges+2 {
		t.Errorf("the diff file does not hold every change (%d diffs)", strings.Count(string(diff), "diff --git"))
	}
	if s, _ := readWS(t, ws, "Makefile"); s != "all:\n\t./run\n" {
		t.Errorf("Makefile: %q", s)
	}
}

// A secret-named file that existed: the diff shows what the job wrote,
// never the owner's earlier contents; a deny path is listed, never read.
func TestOverlaySecretsShowOnlyWhatTheJobWrote(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "config/.env.local", "OWNER_SECRET=hunter2\n")
	write(t, ws, "private/keys.txt", "deny-canary\n")
	j := newOverlayJob(t, ws, LandAuto, "private")
	j.write("config/.env.local", "JOB=1\n", 0o644)
	j.write("private/keys.txt", "job-wrote-this\n", 0o644)
	rep := j.end(true)
	if strings.Contains(rep.Diff, "hunter2") || strings.Contains(rep.Diff, "deny-canary") || strings.Contains(rep.Diff, "job-wrote-this") {
		t.Fatalf("the diff shows a secret:\n%s", rep.Diff)
	}
	if !strings.Contains(rep.Diff, "+JOB=1") {
		t.Errorf("the diff does not show what the job wrote to the secret file:\n%s", rep.Diff)
	}
	got := byPath(rep)
	if !got["config/.env.local"].Secret || !got["private/keys.txt"].Secret || got["private/keys.txt"].Held != HeldDenyPath {
		t.Errorf("record: %+v", rep.Changes)
	}
	if s, _ := readWS(t, ws, "private/keys.txt"); s != "deny-canary\n" {
		t.Errorf("a deny path was written: %q", s)
	}
}

// Carry moves what a job did not land to the job that continues it; the
// parent's record then refuses decisions and points at the child.
func TestOverlayCarry(t *testing.T) {
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandAuto)
	j.write(".env", "X=1\n", 0o644)
	j.end(true)
	child := filepath.Join(t.TempDir(), "child")
	carried, _, err := Carry(j.dir, child, "job-child")
	if err != nil || !carried {
		t.Fatalf("carry: %v %v", carried, err)
	}
	if _, err := os.Stat(filepath.Join(OverlayOf(child, ws).Upper, ".env")); err != nil {
		t.Errorf("the child's upper dir lacks the carried change: %v", err)
	}
	if _, err := Promote(ws, j.dir, []string{".env"}); err == nil || !strings.Contains(err.Error(), "job-child") {
		t.Errorf("deciding on the parent after carry: %v", err)
	}
}

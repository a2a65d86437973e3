package guard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The jail binds a write_paths dir read-write only when its path holds no
// symlink (a bind would follow one out of the workspace); a missing dir is
// made.
func TestWritableDirs(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	got := writableDirs(ws, []string{"out", "a/b", "link", "link/sub", "../up"})
	want := []string{filepath.Join(ws, "out"), filepath.Join(ws, "a", "b")}
	if !slices.Equal(got, want) {
		t.Errorf("writableDirs = %v, want %v", got, want)
	}
	if st, err := os.Stat(filepath.Join(ws, "a", "b")); err != nil || !st.IsDir() {
		t.Errorf("a missing write_paths dir was not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); err == nil {
		t.Error("a dir was made through a symlink, outside the workspace")
	}
}

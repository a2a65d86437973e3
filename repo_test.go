package bridge_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestNoLargeTrackedFiles fails when git tracks a file over 1 MB: a built
// binary or a data dump belongs in .gitignore or a release, not the history.
func TestNoLargeTrackedFiles(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		st, err := os.Lstat(string(name))
		if err != nil {
			continue // deleted in the work tree
		}
		if st.Size() > 1<<20 {
			t.Errorf("%s is tracked and %d bytes (over 1 MB): untrack it and add it to .gitignore", name, st.Size())
		}
	}
}

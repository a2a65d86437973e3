package sandbox

// A case of the review of the job boundary against the jail's view itself.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The jail's view is no boundary for what runs at its level. Its /proc is
// the host's, so a process inside the jail but outside Claude Code's own
// sandbox (Claude Code itself, its file tools, the approval child, and
// whatever those start) finds its parent — bubblewrap, in the host's mount
// namespace — there and reads and writes the whole host through
// /proc/<pid>/root: here a file beside the workspace and a file in the
// owner's home. With the state dir's approval queue bound read-write, the
// same process could write the approval-off flag for every job.
func TestReviewJailViewReachesTheHostThroughProc(t *testing.T) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap not installed:", err)
	}
	root := t.TempDir()
	ws := filepath.Join(root, "roots", "ws")
	home := filepath.Join(root, "home")
	cfg, tmp := filepath.Join(root, "cfg"), filepath.Join(root, "tmp")
	for _, d := range []string{ws, home, cfg, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, root, "roots/other/secret.txt", "other-workspace-canary\n", 0o644)
	args, err := JailArgs(JailOptions{Bwrap: bw, Workspace: ws, ConfigDir: cfg, Tmp: tmp})
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "roots", "other", "secret.txt")
	planted := filepath.Join(home, "planted")
	// The file is not in the jail's view by its own name (the control);
	// through the parent's root it is.
	script := `cat "` + other + `"; cat "/proc/$PPID/root` + other + `"; echo planted > "/proc/$PPID/root` + planted + `"`
	out, err := exec.Command(args[0], append(args[1:], "/bin/sh", "-c", script)...).CombinedOutput()
	t.Logf("in the jail: %v: %s", err, out)
	if strings.Contains(string(out), "other-workspace-canary") {
		t.Errorf("a process in the jail read another workspace's file through /proc/$PPID/root: %q", out)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("a process in the jail wrote into the owner's home through /proc/$PPID/root: %s", planted)
	}
}

package guard

import (
	"context"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// newJailFixture is a guard whose jobs run in real bubblewrap, with this
// test binary standing for the bridge binary the jail binds.
func newJailFixture(t *testing.T) *guardFixture {
	t.Helper()
	bw := testenv.Bwrap(t)
	f := newGuardFixture(t, nil, nil)
	f.g.bwrap = bw
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.g.exe = self // the jail binds the bridge binary: it must exist
	return f
}

// A workspace is admitted (every symlink resolved, inside a root)
// when the job is started, but the jail binds it by path when bubblewrap
// runs, after Prepare's walks; bubblewrap follows a symlink there. A
// second job whose workspace holds this one (nothing stops two jobs
// sharing a tree) swaps the admitted dir for a link to a dir outside every
// root — the owner's home — in between. The jail binds a descriptor of the
// admitted dir (opened without following a link), so the swap changes
// nothing the job sees. The test does that swap by hand after Prepare and
// runs a command through the job's jail, as the harness does.
func TestJailBindsTheAdmittedWorkspaceNotWhatItsPathBecomes(t *testing.T) {
	f := newJailFixture(t)
	ws := filepath.Join(f.root, "proj", "sub")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const canary = "HOME-CANARY-OUTSIDE-EVERY-ROOT"
	if err := os.WriteFile(filepath.Join(f.home, "notes.txt"), []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admitted, err := f.g.Admit(ws)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("c", 32)
	spec := harness.Spec{JobID: id, Workspace: admitted, ConfigDir: f.dir.HarnessDir(id)}
	if err := f.g.Prepare(context.Background(), &spec); err != nil {
		t.Fatal(err)
	}
	// The other job's command, in proj/: sub becomes a link to the home.
	if err := os.Rename(ws, ws+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.home, ws); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(spec.Wrap[0], append(spec.Wrap[1:], "/bin/sh", "-c", "cat "+filepath.Join(admitted, "notes.txt")+"; cat "+filepath.Join(admitted, "main.go")+"; echo planted > "+filepath.Join(admitted, ".bashrc-planted"))...)
	cmd.ExtraFiles = spec.WrapFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	spec.WrapAttr(cmd.SysProcAttr) // the job's own PID namespace
	out, _ := cmd.CombinedOutput()
	spec.CloseWrapFiles()
	if !strings.Contains(string(out), "package main") {
		t.Errorf("the job's jail does not show its admitted workspace: %s", out)
	}
	if _, err := os.Stat(filepath.Join(ws+".real", ".bashrc-planted")); err != nil {
		t.Errorf("the job's write did not land in its admitted workspace: %v", err)
	}
	if strings.Contains(string(out), canary) {
		t.Errorf("the job's jail read a file of the home through its swapped workspace: %s", out)
	}
	if _, err := os.Stat(filepath.Join(f.home, ".bashrc-planted")); err == nil {
		t.Errorf("the job's jail wrote into the home through its swapped workspace")
	}
}

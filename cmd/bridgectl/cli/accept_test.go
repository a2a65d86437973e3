package cli

import (
	"strings"
	"testing"
)

// accept says what is missing before it starts a job: a task it does not
// know, a daemon that does not run, roots that would refuse every workspace.
func TestAcceptPreconditions(t *testing.T) {
	te := newTestEnv(t)
	if _, errs, code := te.run("accept", "--only", "D"); code != 2 || !strings.Contains(errs, `accept --only "D": want A, B or C`) {
		t.Errorf("--only D: exit %d %s", code, errs)
	}
	if _, errs, code := te.run("accept"); code != 1 || !strings.Contains(errs, "no running daemon answers: `bridgectl start` first") {
		t.Errorf("no daemon: exit %d %s", code, errs)
	}
	te.must("start")
	if _, errs, code := te.run("accept", "--only", "a"); code != 1 || !strings.Contains(errs, "the daemon has no allowed roots") || !strings.Contains(errs, "`bridgectl allow DIR` first") {
		t.Errorf("no roots: exit %d %s", code, errs)
	}
}

// Task B without python3 fails with what to install, before any job starts.
func TestAcceptNamesAMissingPython(t *testing.T) {
	te := newTestEnv(t)
	for i, kv := range te.environ {
		if strings.HasPrefix(kv, "PATH=") {
			te.environ[i] = "PATH=" + te.pathDir // no python3 there
		}
	}
	te.must("allow", t.TempDir())
	te.must("start")
	out, errs, code := te.run("accept", "--only", "B")
	if code != 1 || !strings.Contains(out, "FAIL B (run a failing script, fix it, run it again): python3 is not installed here") || !strings.Contains(out, "sudo apt-get install python3") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

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

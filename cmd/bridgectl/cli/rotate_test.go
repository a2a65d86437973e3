package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A daemon that cannot take a new secret while it runs (the stand-in says
// nothing of a secret reload in daemon.json) must be restarted: with a job
// waiting, rotate names it and writes and stops nothing; --now restarts it
// and names the job it interrupted.
func TestRotateNeedsNowToRestartOverJobs(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	pid := te.daemonPID()
	id := "e0e0e0e0e0e0" + strings.Repeat("8", 20)
	te.writeJobs(jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: jobs.StatusWaitingApproval, Task: "deploy the site",
		Workspace: te.dir, CreatedAt: time.Now().Add(-time.Minute).UTC(), MaxSteps: 120})
	before, _ := os.ReadFile(te.envFile)

	out, errs, code := te.run("rotate")
	if code == 0 || !strings.Contains(errs, "cannot take a new secret without a restart, which would end 1 unfinished job as interrupted") ||
		!strings.Contains(errs, "e0e0e0e0e0e0") || !strings.Contains(errs, "deploy the site") || !strings.Contains(errs, "`bridgectl rotate --now`") {
		t.Fatalf("rotate over a waiting job: exit %d\n%s%s", code, out, errs)
	}
	if after, _ := os.ReadFile(te.envFile); string(after) != string(before) || te.daemonPID() != pid {
		t.Fatalf("rotate refused, yet wrote .env or restarted (pid %d → %d):\n%s", pid, te.daemonPID(), after)
	}

	out = te.must("rotate", "--now")
	for _, want := range []string{"reloaded: pid", "old URL: 404 (revoked)", "interrupted 1 job:", "e0e0e0e0e0e0  waiting_approval"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate --now lacks %q:\n%s", want, out)
		}
	}
	if after, _ := os.ReadFile(te.envFile); strings.Contains(string(after), testSecret) {
		t.Errorf("rotate --now kept the old secret:\n%s", after)
	}
}

package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// `status` points a disabled bridge at enable and a missing secret at
// secret; a named .env whose directory is missing is named as such.
func TestStatusNextSteps(t *testing.T) {
	te := newTestEnv(t)
	te.must("disable")
	out := te.must("status")
	if !strings.Contains(out, "daemon:    stopped — `bridgectl enable`, then `bridgectl start`") {
		t.Errorf("status of a disabled bridge:\n%s", out)
	}
	te.must("enable")
	if out := te.must("status"); !strings.Contains(out, "daemon:    stopped — `bridgectl start`") {
		t.Errorf("status of an enabled, stopped bridge:\n%s", out)
	}

	te.dropEnvLine("MCP_PATH_SECRET=")
	out = te.must("status")
	if !strings.Contains(out, "local:     none: no MCP_PATH_SECRET — run `bridgectl secret`") || strings.Contains(out, "/mcp/\n") {
		t.Errorf("status without a secret:\n%s", out)
	}

	for _, tt := range []struct{ path, want string }{
		{filepath.Join(te.dir, "nonexistent.env"), "`bridgectl --env " + filepath.Join(te.dir, "nonexistent.env") + " secret` creates it"},
		{filepath.Join(te.dir, "nodir", "x.env"), "its directory " + filepath.Join(te.dir, "nodir") + " does not exist"},
	} {
		_, errs, code := te.run("--env", tt.path, "status")
		if code != 1 || !strings.Contains(errs, tt.want) || strings.Contains(errs, "fix the value in") {
			t.Errorf("--env %s status: exit %d %q", tt.path, code, errs)
		}
	}
}

// `status` points at `bridgectl pending` when a job waits for a human;
// approve and deny treat a malformed or too-short id as a usage error (exit
// 2), as `jobs` does.
func TestStatusPointsAtPendingAndShortApprovalIDs(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Minute).UTC()
	running := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: strings.Repeat("1", 32), Status: jobs.StatusRunning, Task: "build", CreatedAt: t0, MaxSteps: 120}
	te.writeJobs(running)
	out := te.must("status")
	if !strings.Contains(out, "jobs:      1 not finished (`bridgectl jobs` for more)") || strings.Contains(out, "bridgectl pending") {
		t.Errorf("status with a running job:\n%s", out)
	}
	waiting := func(id string) jobs.Snapshot {
		return jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: jobs.StatusWaitingApproval, Task: "deploy", CreatedAt: t0, MaxSteps: 120,
			Approval: &jobs.ApprovalInfo{ID: strings.Repeat("e", 32), Summary: "make deploy"}}
	}
	te.writeJobs(waiting(strings.Repeat("2", 32)))
	out = te.must("status")
	if !strings.Contains(out, "jobs:      2 not finished, 1 waiting for your approval: `bridgectl pending` shows what it asks (`bridgectl jobs` for more)") {
		t.Errorf("status with a job waiting for approval:\n%s", out)
	}
	te.writeJobs(waiting(strings.Repeat("3", 32)))
	if out = te.must("status"); !strings.Contains(out, "3 not finished, 2 waiting for your approval: `bridgectl pending` shows what they ask") {
		t.Errorf("status with two jobs waiting for approval:\n%s", out)
	}

	for _, cmd := range []string{"approve", "deny"} {
		for _, id := range []string{"abc", "0123456", "not-hex-at-all", strings.Repeat("g", 32), strings.Repeat("a", 33)} {
			t.Run(cmd+" "+id, func(t *testing.T) {
				_, errs, code := te.run(cmd, id)
				if code != 2 || !strings.Contains(errs, "a unique prefix of 8 or more") || strings.Contains(errs, "unknown approval id") {
					t.Errorf("%s %s: exit %d %q", cmd, id, code, errs)
				}
			})
		}
	}
	// A well-formed prefix that matches nothing stays "not waiting" (exit 1);
	// upper case is the same id.
	if _, errs, code := te.run("approve", "0123456789AB"); code != 1 || !strings.Contains(errs, "`bridgectl pending`") {
		t.Errorf("approve of an unknown prefix: exit %d %q", code, errs)
	}
}

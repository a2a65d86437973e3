package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// `job kill` writes for the owner, with an exit code per
// outcome; `jobs ID` and `job kill ID` take a unique prefix.
func TestJobKillForTheOwnerAndPrefixes(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-90 * time.Second).UTC()
	ended := t0.Add(time.Minute)
	running := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0123abcd" + strings.Repeat("1", 24), Status: jobs.StatusRunning, Task: "reverse witness.txt",
		Workspace: "/srv/ws", CreatedAt: t0, MaxSteps: 120, Steps: 3, LastTool: "Bash"}
	done := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "4567cdef" + strings.Repeat("2", 24), Status: jobs.StatusDone, Task: "older task",
		Workspace: "/srv/ws", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120, Steps: 5, Result: "all good", Nonce: "n0nce"}
	twinA := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "cafebabe" + strings.Repeat("a", 24), Status: jobs.StatusQueued, Task: "twin a", CreatedAt: t0, MaxSteps: 120}
	twinB := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "cafebabe" + strings.Repeat("b", 24), Status: jobs.StatusDone, Task: "twin b", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120}
	dir := te.writeJobs(running, done, twinA, twinB)

	// jobs ID: a unique prefix; an ambiguous one lists the matches; a short one says what an id is.
	if out := te.must("jobs", running.ID[:8]); !strings.Contains(out, "job:        "+running.ID) {
		t.Errorf("jobs PREFIX:\n%s", out)
	}
	out, errs, code := te.run("jobs", "cafebabe")
	if code != 2 || !strings.Contains(errs, twinA.ID) || !strings.Contains(errs, twinB.ID) || !strings.Contains(errs, "twin a") {
		t.Errorf("jobs AMBIGUOUS: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := te.run("jobs", "0123"); code != 2 || !strings.Contains(errs, "8 or more") {
		t.Errorf("jobs SHORT: exit %d %q", code, errs)
	}
	if _, errs, code := te.run("jobs", "deadbeef"); code != 1 || !strings.Contains(errs, "`bridgectl jobs`") {
		t.Errorf("jobs UNKNOWN-PREFIX: exit %d %q", code, errs)
	}

	te.must("start")
	// A running job, by prefix: cancelled, said for the owner.
	out, errs, code = te.run("job", "kill", running.ID[:8])
	if code != 0 || !strings.Contains(out, "cancelled job "+running.ID) || !strings.Contains(out, "was running") || !strings.Contains(out, "3 tool calls") || !strings.Contains(out, "elapsed") {
		t.Errorf("job kill RUNNING: exit %d\n%s%s", code, out, errs)
	}
	for _, modelText := range []string{"nonce", "deepseek_agent", "the caller", "quote"} {
		if strings.Contains(out+errs, modelText) {
			t.Errorf("job kill prints text written for the model (%q):\n%s%s", modelText, out, errs)
		}
	}
	if s, err := jobs.Load(dir, running.ID); err != nil || s.Status != jobs.StatusCancelled {
		t.Errorf("snapshot after kill: %v %s", err, s.Status)
	}
	// A job that already ended: nothing cancelled, exit 3 — also the one just killed.
	for _, id := range []string{done.ID, running.ID[:10]} {
		out, errs, code = te.run("job", "kill", id)
		if code != 3 || !strings.Contains(out, "already ended") || !strings.Contains(out, "nothing was cancelled") {
			t.Errorf("job kill %s (ended): exit %d\n%s%s", id, code, out, errs)
		}
	}
	if !strings.Contains(out, "cancelled") {
		t.Errorf("job kill of a cancelled job does not give its final status:\n%s", out)
	}
	if s, _ := jobs.Load(dir, done.ID); s.Status != jobs.StatusDone {
		t.Errorf("a done job changed: %s", s.Status)
	}
	// Unknown ids, full or prefix: exit 1 and how to list jobs.
	for _, id := range []string{strings.Repeat("0", 32), "deadbeef"} {
		out, errs, code = te.run("job", "kill", id)
		if code != 1 || !strings.Contains(errs, "no job") || !strings.Contains(errs, "`bridgectl jobs`") || strings.Contains(errs, "deepseek_agent") {
			t.Errorf("job kill %s (unknown): exit %d\n%s%s", id, code, out, errs)
		}
	}
	// Ambiguous: usage, with the matches.
	if _, errs, code := te.run("job", "kill", "cafebabe"); code != 2 || !strings.Contains(errs, twinA.ID) {
		t.Errorf("job kill AMBIGUOUS: exit %d %q", code, errs)
	}
	if out := te.must("job", "--help"); !strings.Contains(out, "exit status") || !strings.Contains(out, "3 ") {
		t.Errorf("job --help does not document the exit codes:\n%s", out)
	}
}

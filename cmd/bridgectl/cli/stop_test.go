package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A daemon that must be killed (it ignores SIGTERM) cannot mark its jobs:
// stop still names them, and says their snapshots are fixed at the next start.
func TestStopNamesJobsOfAKilledDaemon(t *testing.T) {
	old := stopGrace
	stopGrace = 500 * time.Millisecond
	t.Cleanup(func() { stopGrace = old })
	te := newTestEnv(t, "FAKEBRIDGE_IGNORE_TERM=1")
	te.must("start")
	job := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "e0e0e0e0e0e0" + strings.Repeat("8", 20), Status: jobs.StatusRunning, Task: "stuck",
		CreatedAt: time.Now().UTC(), MaxSteps: 120}
	te.writeJobs(job)
	out := te.must("stop")
	for _, want := range []string{"daemon stopped", "1 job was not finished", "killed", "e0e0e0e0e0e0  running           stuck", "interrupted"} {
		if !strings.Contains(out, want) {
			t.Errorf("stop of a killed daemon lacks %q:\n%s", want, out)
		}
	}
}

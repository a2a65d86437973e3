package e2e

// A job's own bounds (issue 25): a job that forks, allocates or writes
// without end (into a tmpfs, or a file it deleted, too) is killed, its whole tree at once, with a stop_reason naming
// the bound, while the daemon and a job beside it go on. Real bridge, real
// Claude Code, its commands in bubblewrap; every command is bounded by
// itself, so a watcher that did not hold could not run away with the
// machine either.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// limitJobs are the commands, keyed by a marker in their job's task.
var limitJobs = map[string]string{
	"JOB-FORKS":  `for i in $(seq 1 3000); do sleep 120 & done; wait`,
	"JOB-ALLOCS": `python3 -c 'a = [b"x" * (16 << 20) for _ in range(256)]'`,
	// Claude Code's sandbox binds the jail's /tmp read-only and gives its
	// commands $TMPDIR, /tmp/claude-<uid> of the jail's /tmp, read-write.
	"JOB-FILLS":  `dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=2048 status=none && echo filled; sleep 60`,
	"JOB-WRITES": `dd if=/dev/zero of=fill.bin bs=1M count=2048 status=none && echo filled; sleep 60`,
	// Claude Code's sandbox gives each command a tmpfs: memory that no
	// process's RSS shows.
	"JOB-TMPFS": `dd if=/dev/zero of="$TMPDIR/bash-edit-diff/fill" bs=1M count=2048 status=none && echo filled; sleep 60`,
	// A file it deleted but keeps open.
	"JOB-UNLINKS": `exec 3>gone.bin; rm gone.bin; dd if=/dev/zero bs=1M count=2048 status=none >&3 && echo filled; sleep 60`,
	"JOB-BESIDE":  `sleep 6; echo beside-alive`,
}

// limitTurn answers any job's request from the request alone: the first
// runs its job's command, the next ends the job with what the command said.
// So the turns may be taken in any order by jobs running side by side.
func limitTurn(r dt.Request) dt.Turn {
	msgs, _ := json.Marshal(r.Messages())
	for marker, cmd := range limitJobs {
		if !strings.Contains(string(msgs), marker) {
			continue
		}
		if res := r.ToolResultTexts(); len(res) > 0 {
			return dt.Text("the command said: " + res[len(res)-1])
		}
		return dt.ToolCalls(bash(cmd))
	}
	return dt.Text("no job marker in the request")
}

func TestJobLimitsStopTheJobAlone(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{
		"BRIDGE_JOB_MAX_PROCESSES": "400",
		"BRIDGE_JOB_MAX_MEMORY_MB": "1536",
		"BRIDGE_JOB_MAX_DISK_MB":   "256",
	})
	a.approveEverything(t)
	turns := make([]dt.Turn, 40)
	for i := range turns {
		turns[i] = dt.Func(limitTurn)
	}
	a.d.ScriptAnthropic(turns...)
	cs := goSDKClient(t, a.URL())
	for _, tc := range []struct{ marker, reason, says string }{
		{"JOB-FORKS", "process_limit", "BRIDGE_JOB_MAX_PROCESSES"},
		{"JOB-ALLOCS", "memory_limit", "BRIDGE_JOB_MAX_MEMORY_MB"},
		{"JOB-FILLS", "disk_limit", "BRIDGE_JOB_MAX_DISK_MB"},
		{"JOB-WRITES", "disk_limit", "BRIDGE_JOB_MAX_DISK_MB"},
		{"JOB-TMPFS", "memory_limit", "BRIDGE_JOB_MAX_MEMORY_MB"},
		{"JOB-UNLINKS", "disk_limit", "BRIDGE_JOB_MAX_DISK_MB"},
	} {
		t.Run(tc.marker, func(t *testing.T) {
			beside := startJob(t, cs, "Run the command of JOB-BESIDE.", a.workspace(t, nil)).P.JobID
			id := startJob(t, cs, fmt.Sprintf("Run the command of %s.", tc.marker), a.workspace(t, nil)).P.JobID
			c := waitSettled(t, cs, id, 2*jobLimit)
			if c.P.Status != "error" || c.P.StopReason != tc.reason || !strings.Contains(c.P.Error, tc.says) || !strings.Contains(c.P.Error, "every process of the job was killed") {
				t.Fatalf("%s ended %s (%s): %s", tc.marker, c.P.Status, c.P.StopReason, c.P.Error)
			}
			t.Logf("%s: %s", tc.marker, c.P.Error)
			assertJobTreeGone(t, id)
			// The job beside it ran its command to its end, and the daemon
			// still answers.
			b := waitSettled(t, cs, beside, 2*jobLimit)
			if b.P.Status != "done" || !strings.Contains(b.P.Result, "beside-alive") {
				t.Fatalf("the job beside %s ended %s (%s): %s %s", tc.marker, b.P.Status, b.P.StopReason, b.P.Result, b.P.Error)
			}
			assertJobTreeGone(t, beside)
		})
	}
	if log := string(a.LogBytes()); !strings.Contains(log, "process_limit") || !strings.Contains(log, "memory_limit") {
		t.Errorf("the log has no job-end line naming the bounds:\n%s", log)
	}
}

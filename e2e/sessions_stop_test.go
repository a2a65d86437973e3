package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Twenty cancels of a job running an allow-listed sleeper, tail -f (in the sandbox:
// its own session and process group), with every core kept busy: each time
// the cancel returns, no process of the job's tree — the sleeper included —
// is left, and the interrupted turn's result line is in the job's trace
// (the stop asked Claude Code to interrupt before any signal).
func TestSessionsCancelLeavesNoSleeper(t *testing.T) {
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "100"})
	ws := a.workspace(t, map[string]string{"wait.log": ""})
	cs := goSDKClient(t, a.URL())

	stop := make(chan struct{})
	var burners sync.WaitGroup
	for range runtime.NumCPU() {
		burners.Add(1)
		go func() { // the machine is busy
			defer burners.Done()
			for n := 0; ; n++ {
				if n%1_000_000 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}
	defer func() { close(stop); burners.Wait() }()

	for i := range 20 {
		a.d.ScriptAnthropic(tailTurn()) // tail -f: allow-listed, never ends
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Sleep.", "workspace": ws}, nil)
		if c.IsError {
			t.Fatalf("start %d: %s", i, c.Text)
		}
		id := c.P.JobID
		waitJobCommand(t, id, "tail", 90*time.Second)
		asked := time.Now()
		c = callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil)
		t.Logf("cancel %d returned after %v", i, time.Since(asked).Round(time.Millisecond))
		if c.P.Status != string(jobs.StatusCancelled) {
			t.Fatalf("cancel %d: %s: %s", i, c.P.Status, c.Text)
		}
		if left := liveProcesses(harness.JobProcesses(id)); len(left) > 0 {
			t.Fatalf("cancel %d returned with processes of job %s alive: %v", i, id, left)
		}
		snap := assertSnapshotFile(t, a.dir(), id, jobs.StatusCancelled)
		if !traceHas(snap, "result", "error_during_execution") {
			t.Fatalf("cancel %d: the interrupted turn's result is not in the trace: %+v", i, snap.Trace)
		}
	}
}

// liveProcesses drops zombies (exited, not yet reaped) from pids, with
// their command lines.
func liveProcesses(pids []int) []string {
	var out []string
	for _, pid := range pids {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

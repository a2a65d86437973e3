package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With the real daemon and Claude Code: a running job's task, sent by the MCP
// caller with an escape sequence, is shown escaped by `bridgectl jobs`;
// `bridgectl allow` does not reload (which would interrupt the job) and names
// it; `bridgectl reload` interrupts it and says so, and no process of the job
// is left.
func TestAllowAndReloadWithARunningJob(t *testing.T) {
	w, _, jobID := startRunningJob(t, "benign\u001b[2K\rfake line", "other")
	other := filepath.Join(w.dir, "other")
	pid, _ := w.daemonInfo()

	// Item 1: the caller's escape sequence is shown, not sent to the terminal.
	for _, args := range [][]string{{"jobs"}, {"jobs", jobID}, {"status"}} {
		out := w.must(args...)
		if strings.ContainsAny(out, "\x1b\r") || !strings.Contains(out, `benign\u{1b}[2K fake line`) {
			t.Errorf("bridgectl %v prints the task raw or not at all:\n%q", args, out)
		}
	}

	// Item 2: allow writes .env but does not reload while the job runs.
	out := w.must("allow", other)
	if !strings.Contains(out, "NOT reloaded: 1 job is not finished") || !strings.Contains(out, jobID[:12]+"  running") || strings.Contains(out, "reloaded: pid") {
		t.Fatalf("allow with a running job:\n%s", out)
	}
	if pid2, _ := w.daemonInfo(); pid2 != pid {
		t.Fatalf("allow restarted the daemon: pid %d → %d", pid, pid2)
	}
	if out := w.must("jobs", jobID); !strings.Contains(out, "status:     running") {
		t.Fatalf("the job after allow:\n%s", out)
	}
	if env, err := os.ReadFile(w.envFile); err != nil || !strings.Contains(string(env), other) {
		t.Fatalf(".env lacks the new root: %v\n%s", err, env)
	}

	// reload interrupts it and names it; the real daemon recorded it.
	out = w.must("reload")
	if !strings.Contains(out, "reloaded: pid") || !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, jobID[:12]+"  running") {
		t.Fatalf("reload with a running job:\n%s", out)
	}
	if out := w.must("jobs", jobID); !strings.Contains(out, "status:     interrupted") {
		t.Fatalf("the job after reload:\n%s", out)
	}
	if left := procsWithMarker("BRIDGE_JOB_ID=" + jobID); len(left) > 0 {
		t.Fatalf("the job's processes outlived the reload: %v", left)
	}
	if out := w.must("allow"); !strings.Contains(out, other) {
		t.Fatalf("allowed roots after reload:\n%s", out)
	}
}

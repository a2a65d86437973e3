package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// `bridgectl job kill ID` cancels a live job through the daemon's
// deepseek_agent_cancel: the job ends as cancelled, and no process of its tree
// (marked BRIDGE_JOB_ID=ID) is left.
func TestJobKill(t *testing.T) {
	w, _, jobID := startRunningJob(t, "say hello")
	if out := w.must("jobs"); !strings.Contains(out, jobID+"  running") {
		t.Fatalf("jobs before kill:\n%s", out)
	}
	// By an 8-character prefix; the text is for the owner, not the model.
	out := w.must("job", "kill", jobID[:8])
	if !strings.Contains(out, "cancelled job "+jobID+" (cancelled_by_owner): it was running") || strings.Contains(out, "nonce") || strings.Contains(out, "deepseek_agent") {
		t.Fatalf("job kill: %q", out)
	}
	// The snapshot is written by another process: poll it.
	if !poll.Until(30*time.Second, func() bool { out = w.must("jobs", jobID); return strings.Contains(out, "status:     cancelled") }) {
		t.Fatalf("job not cancelled:\n%s", out)
	}
	if left := procsWithMarker("BRIDGE_JOB_ID=" + jobID); len(left) > 0 {
		t.Fatalf("the job's processes are still alive: %v", left)
	}
	// Again: it had already ended, nothing is cancelled (exit 3).
	if out, errs, code := w.ctl("job", "kill", jobID); code != 3 || !strings.Contains(out, "had already ended: cancelled") {
		t.Fatalf("killing an ended job: %d %q %q", code, out, errs)
	}
	if _, errs, code := w.ctl("job", "kill", strings.Repeat("0", 32)); code != 1 || !strings.Contains(errs, "no job") || !strings.Contains(errs, "`bridgectl jobs`") {
		t.Fatalf("killing an unknown job: %d %q", code, errs)
	}
}

// procsWithMarker lists live (non-zombie) processes whose environment holds marker.
func procsWithMarker(marker string) []string {
	w := &world{marker: marker}
	return w.leftovers()
}

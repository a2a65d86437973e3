package e2e

// Sessions (issue 13): one job per workspace, continuing a job that ended
// without done, the list of jobs with parents and children.

import (
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A second start on a workspace where a job runs is refused and names the
// first job; once it is cancelled the workspace is free again.
func TestSessionsWorkspaceLock(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	cs := goSDKClient(t, a.URL())
	id, ws := a.startTailJob(t, cs)
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Also here.", "workspace": ws}, nil)
	if !c.IsError || !strings.Contains(c.Text, "job "+id+" is running") || !strings.Contains(c.Text, "deepseek_agent_cancel") {
		t.Fatalf("second start = IsError %v: %s", c.IsError, c.Text)
	}
	if c := callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil); c.P.Status != string(jobs.StatusCancelled) {
		t.Fatalf("cancel = %s: %s", c.P.Status, c.Text)
	}
	a.d.ScriptAnthropic(tailTurn())
	c = callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Now.", "workspace": ws, "timeout_seconds": 1}, nil)
	if c.IsError {
		t.Fatalf("start after the cancel: %s", c.Text)
	}
	waitSettled(t, cs, c.P.JobID, 60*time.Second)
}

package e2e

// Sessions (issue 13): one job per workspace, continuing a job that ended
// without done, the list of jobs with parents and children.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
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

// A job stopped by its step ceiling is continued with "go on": the new job
// (its own id) resumes the conversation — its model request carries the
// earlier turns — and reaches done with its own nonce. The same holds after
// kill -9 of the daemon and a restart.
func TestSessionsContinueAfterStepCeiling(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := "same daemon"
		if kill {
			name = "after kill -9 and restart"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := startAgentBridge(t, false, nil)
			ws := a.workspace(t, nil)
			for i := range 3 {
				a.d.ScriptAnthropic(dt.ToolCalls(dt.Call("Bash", map[string]any{"command": fmt.Sprintf("echo leg-one-step%d", i), "description": "step"})))
			}
			cs := goSDKClient(t, a.URL())
			first := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Count the steps.", "workspace": ws, "max_steps": 2}, nil)
			assertNotDone(t, first, jobs.StatusError)
			assertStopReason(t, first, jobs.StopStepCeiling, "max_steps")
			if !first.P.CanContinue || !strings.Contains(first.P.NextStep, "deepseek_agent_continue") || !strings.Contains(first.Text, `deepseek_agent_continue with job_id "`+first.P.JobID+`"`) {
				t.Fatalf("a step-ceiling job does not say it can be continued: can_continue %v, next_step %q", first.P.CanContinue, first.P.NextStep)
			}
			if kill {
				a.Kill9()
				a.Restart()
				cs = goSDKClient(t, a.URL())
			}
			before := len(a.d.ScriptedAnthropicRequests())
			a.d.ScriptAnthropic(dt.Text("Went on and finished: three steps."))
			c := callAgent(t, t.Context(), cs, "deepseek_agent_continue", map[string]any{"job_id": first.P.JobID, "task": "go on"}, nil)
			if c.IsError {
				t.Fatalf("continue: %s", c.Text)
			}
			if c.P.Status != string(jobs.StatusDone) {
				c = waitSettled(t, cs, c.P.JobID, 90*time.Second)
			}
			if c.P.Status != string(jobs.StatusDone) || c.P.Result != "Went on and finished: three steps." || !hexNonce.MatchString(c.P.Nonce) {
				t.Fatalf("continued job = %s %q nonce %q: %s", c.P.Status, c.P.Result, c.P.Nonce, c.Text)
			}
			if c.P.JobID == first.P.JobID || c.P.Parent != first.P.JobID {
				t.Errorf("continued job %s, parent %q; first %s", c.P.JobID, c.P.Parent, first.P.JobID)
			}
			reqs := a.d.ScriptedAnthropicRequests()[before:]
			if len(reqs) == 0 {
				t.Fatal("the continued job made no scripted model request")
			}
			body := string(reqs[0].Body)
			for _, want := range []string{"Count the steps.", "echo leg-one-step0", "leg-one-step1", "go on"} {
				if !strings.Contains(body, want) {
					t.Errorf("the continued job's model request lacks %q (the earlier turns)", want)
				}
			}
			if got := reqs[0].LastUserText(); !strings.Contains(got, "go on") {
				t.Errorf("last user text = %q, want the continue's task", got)
			}
			snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
			if snap.Parent != first.P.JobID || snap.ResumeSession == "" {
				t.Errorf("snapshot parent %q resume %q", snap.Parent, snap.ResumeSession)
			}
			assertListed(t, cs, first.P.JobID, c.P.JobID)
		})
	}
}

// A continue of an unknown job says so and suggests a new start; a continue
// of a running job points to message and poll.
func TestSessionsContinueRefusals(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_continue", map[string]any{"job_id": strings.Repeat("ab", 16), "task": "go on"}, nil)
	if !c.IsError || !strings.Contains(c.Text, "unknown job id") || !strings.Contains(c.Text, "deepseek_agent_start") {
		t.Errorf("unknown job: IsError %v %s", c.IsError, c.Text)
	}
	id, _ := a.startTailJob(t, cs)
	c = callAgent(t, t.Context(), cs, "deepseek_agent_continue", map[string]any{"job_id": id, "task": "go on"}, nil)
	if !c.IsError || !strings.Contains(c.Text, "is still running") || !strings.Contains(c.Text, "deepseek_agent_message") {
		t.Errorf("running job: IsError %v %s", c.IsError, c.Text)
	}
	callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil)
}

// assertListed checks deepseek_agent_list: the child first (newest), done and
// continuing the parent; the parent an error, continued by the child, and
// both can be continued.
func assertListed(t *testing.T, cs *mcp.ClientSession, parent, child string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_agent_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out tools.AgentListOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Jobs) != 2 || out.Jobs[0].JobID != child || out.Jobs[1].JobID != parent {
		t.Fatalf("list = %+v", out.Jobs)
	}
	c, p := out.Jobs[0], out.Jobs[1]
	if c.Status != string(jobs.StatusDone) || c.Parent != parent || len(c.Children) != 0 || !c.CanContinue || c.Model == "" {
		t.Errorf("child entry = %+v", c)
	}
	if p.Status != string(jobs.StatusError) || p.Parent != "" || len(p.Children) != 1 || p.Children[0] != child || !p.CanContinue || p.Steps != 3 {
		t.Errorf("parent entry = %+v", p)
	}
}

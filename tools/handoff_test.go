package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A cancel is the owner's only when its _meta carries the owner token; a
// wrong token, none, or a bridge without one make it the caller's.
func TestCancelledByOwnerToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	cases := []struct {
		name  string
		opts  string // the bridge's owner token
		meta  any    // what the call's _meta carries under OwnerMetaKey (nil: no _meta)
		want  jobs.StopReason
		words string
	}{
		{"owner", token, token, jobs.StopCancelledByOwner, "owner cancelled it"},
		{"wrong token", token, strings.Repeat("f", 32), jobs.StopCancelledByCaller, "deepseek_agent_cancel"},
		{"not a string", token, 42, jobs.StopCancelledByCaller, "deepseek_agent_cancel"},
		{"no meta", token, nil, jobs.StopCancelledByCaller, "deepseek_agent_cancel"},
		{"bridge without a token", "", "", jobs.StopCancelledByCaller, "deepseek_agent_cancel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeJobs{waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
			_, h := AgentCancelTool(f, AgentToolOptions{OwnerToken: c.opts})
			req := mcp.CallToolRequest{}
			req.Params.Arguments = map[string]any{"job_id": jobID}
			if c.meta != nil {
				req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{OwnerMetaKey: c.meta}}
			}
			res, err := h(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			p := payloadOf(t, res)
			if f.cancelledBy[0] != c.want || p.StopReason != string(c.want) || !strings.Contains(p.NextStep, c.words) {
				t.Fatalf("cancelled by %v, stop_reason %q, next_step %q; want %s", f.cancelledBy, p.StopReason, p.NextStep, c.want)
			}
		})
	}
}

// Every status gets a next step and a summary in the JSON, and the text of
// an ended job ends with the same next step.
func TestNextStepAndSummaryPerStatus(t *testing.T) {
	cases := []struct {
		status jobs.Status
		reason jobs.StopReason
		want   string
	}{
		{jobs.StatusQueued, "", `Nothing to report yet: do not describe any result; call deepseek_agent_poll with job_id "` + jobID + `" again.`},
		{jobs.StatusRunning, "", "Nothing to report yet"},
		{jobs.StatusWaitingApproval, "", "A person must decide: ask the owner to run `bridgectl pending`"},
		{jobs.StatusWaitingApproval, "", "and wait_seconds 40: the poll waits for the person's answer"},
		{jobs.StatusDone, jobs.StopCompleted, "quote the nonce fedcba9876543210fedcba9876543210 verbatim"},
		{jobs.StatusError, jobs.StopStepCeiling, "larger max_steps"},
		{jobs.StatusCancelled, jobs.StopCancelledByOwner, "The owner cancelled it"},
		{jobs.StatusInterrupted, jobs.StopInterruptedByRestart, "restarted while it ran"},
	}
	for _, c := range cases {
		s := snap(c.status)
		s.StopReason = c.reason
		p := Payload(s, s.CreatedAt)
		if !strings.Contains(p.NextStep, c.want) {
			t.Errorf("%s: next_step %q lacks %q", c.status, p.NextStep, c.want)
		}
		if !strings.HasPrefix(p.Summary, "job "+jobID+" "+string(c.status)) {
			t.Errorf("%s: summary %q", c.status, p.Summary)
		}
		if text := AgentText(p); c.status.Final() && !strings.HasSuffix(text, "Next step: "+p.NextStep) {
			t.Errorf("%s: the text does not end with the next step:\n%s", c.status, text)
		}
	}
}

// A job a restart interrupted after its agent began says that
// deepseek_agent_continue picks it up, with its job id; one interrupted
// before it began (no session) says to start again, and is not continuable.
func TestNextStepOfInterruptedJobs(t *testing.T) {
	now := time.Now()
	began := jobs.Snapshot{ID: "job-a", Status: jobs.StatusInterrupted, StopReason: jobs.StopInterruptedByRestart, SessionID: "s1", CreatedAt: now, EndedAt: &now}
	p := Payload(began, now)
	if !p.CanContinue || !strings.Contains(p.NextStep, `deepseek_agent_continue with job_id "job-a"`) || !strings.Contains(p.NextStep, "continue it where it stopped") {
		t.Errorf("began: can_continue %v next_step %q", p.CanContinue, p.NextStep)
	}
	never := began
	never.SessionID = ""
	p = Payload(never, now)
	if p.CanContinue || strings.Contains(p.NextStep, "deepseek_agent_continue") || !strings.Contains(p.NextStep, "start it again") {
		t.Errorf("never began: can_continue %v next_step %q", p.CanContinue, p.NextStep)
	}
}

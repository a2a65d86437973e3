package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// fakeHost is a HostApprovals holding one pending request.
type fakeHost struct {
	pr      approvals.PendingRequest
	decided []string
}

func (h *fakeHost) Request(id string) (approvals.PendingRequest, error) {
	if id != h.pr.ID {
		return approvals.PendingRequest{}, approvals.ErrUnknownID
	}
	return h.pr, nil
}

func (h *fakeHost) DecideVia(id string, approve bool, reason, who, channel string) error {
	verb := "deny"
	if approve {
		verb = "allow"
	}
	h.decided = append(h.decided, id+" "+verb+" "+who+" "+channel+": "+reason)
	return nil
}

const pendingID = "fedcba9876543210fedcba9876543210"

func waitingJob() (*fakeJobs, *fakeHost) {
	s := snap(jobs.StatusWaitingApproval)
	s.Workspace = "/ws"
	s.Approval = &jobs.ApprovalInfo{ID: pendingID, Summary: "Bash: ln -s a b"}
	f := &fakeJobs{waitSnaps: map[string]jobs.Snapshot{jobID: s}}
	h := &fakeHost{pr: approvals.PendingRequest{ID: pendingID, JobID: jobID, Tool: "Bash", Summary: "Bash: ln -s a b",
		Reason: "ln is not on the allow list", Expires: time.Now().Add(time.Minute)}}
	return f, h
}

func pollCall(args map[string]any, rt mcp.MultiRoundTripParams) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = "deepseek_agent_poll"
	req.Params.Arguments = args
	req.Params.MultiRoundTripParams = rt
	return req
}

// A poll of a job waiting for a person asks the host at once, only when
// the call is marked WithHostAsk; the answer it gets back decides that
// request, and an answer that the daemon did not ask for, or on a call that
// may not decide, decides nothing.
func TestPollAsksTheHostAndTakesOnlyItsOwnAnswers(t *testing.T) {
	f, h := waitingJob()
	_, poll := AgentPollTool(f, AgentToolOptions{Host: h})
	args := map[string]any{"job_id": jobID, "wait_seconds": 0}

	res, err := poll(context.Background(), pollCall(args, mcp.MultiRoundTripParams{}))
	if err != nil || res.NeedsInput() {
		t.Fatalf("a call not marked WithHostAsk asked the host: %+v %v", res, err)
	}
	ask := WithHostAsk(context.Background())
	res, err = poll(ask, pollCall(args, mcp.MultiRoundTripParams{}))
	if err != nil || !res.NeedsInput() || res.InputRequests[hostInputKey].Elicitation == nil {
		t.Fatalf("the poll did not ask: %+v %v", res, err)
	}
	q := res.InputRequests[hostInputKey].Elicitation
	for _, want := range []string{"Bash: ln -s a b", "Workspace: /ws", "Why a person decides: ln is not on the allow list", "bridgectl approve " + pendingID} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("the question lacks %q: %s", want, q.Message)
		}
	}
	state := res.RequestState
	accept := mcp.InputResponses{hostInputKey: mcp.NewElicitationInputResponse(mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}})}

	for name, tc := range map[string]struct {
		ctx   context.Context
		state string
	}{
		"a forged state":             {ask, jobID + "/" + pendingID + "/00"},
		"another job's signed state": {ask, signState("ffffffffffffffffffffffffffffffff", pendingID)},
		"a call that may not decide": {context.Background(), state},
	} {
		res, _ := poll(tc.ctx, pollCall(args, mcp.MultiRoundTripParams{InputResponses: accept, RequestState: tc.state}))
		if !res.IsError || len(h.decided) != 0 {
			t.Errorf("%s: IsError %v, decided %q", name, res.IsError, h.decided)
		}
	}

	// The host's accept decides the request; the same request is not asked
	// about again while the job takes the answer in.
	res, _ = poll(ask, pollCall(args, mcp.MultiRoundTripParams{InputResponses: accept, RequestState: state}))
	if res.IsError || res.NeedsInput() {
		t.Fatalf("after the answer: %+v", res)
	}
	if want := pendingID + " allow " + HostUser + " host: accepted in the MCP host"; len(h.decided) != 1 || h.decided[0] != want {
		t.Errorf("decided %q, want %q", h.decided, want)
	}
	// No answer in the response (an unreadable one) is a deny.
	h.decided = nil
	poll(ask, pollCall(args, mcp.MultiRoundTripParams{RequestState: state}))
	if len(h.decided) != 1 || !strings.Contains(h.decided[0], pendingID+" deny ") {
		t.Errorf("an answer without a response decided %q", h.decided)
	}
}

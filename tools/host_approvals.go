package tools

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// HostApprovals is how an agent tool call asks the host's user to decide a
// job's pending request (approvals.Queue): the request as queued, and the
// decision, recorded with its channel. The first answer wins, whether it
// comes from the host or from `bridgectl approve`.
type HostApprovals interface {
	Request(id string) (approvals.PendingRequest, error)
	DecideVia(id string, approve bool, reason, who, channel string) error
}

var _ HostApprovals = (*approvals.Queue)(nil)

// HostUser is who a decision made in the MCP host is recorded as.
const HostUser = "the MCP host's user"

// hostInputKey names the one question a call asks in its input request.
const hostInputKey = "approval"

type hostAskKey struct{}

// WithHostAsk marks ctx as a call whose host's user may be asked to decide:
// the owner allows it on the call's transport (BRIDGE_HOST_APPROVALS), and
// the host said it answers elicitations. The server sets it per call.
func WithHostAsk(ctx context.Context) context.Context {
	return context.WithValue(ctx, hostAskKey{}, true)
}

func hostMayAsk(ctx context.Context) bool { ok, _ := ctx.Value(hostAskKey{}).(bool); return ok }

// stateKey signs the request state a question carries, so an answer decides
// only a request this daemon asked about, on the job it asked for.
var stateKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("tools: no randomness for the host approvals' key: " + err.Error())
	}
	return k
}()

func signState(jobID, approvalID string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(jobID + "/" + approvalID))
	return jobID + "/" + approvalID + "/" + hex.EncodeToString(m.Sum(nil))
}

func verifyState(state string) (jobID, approvalID string, ok bool) {
	parts := strings.Split(state, "/")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[1], hmac.Equal([]byte(signState(parts[0], parts[1])), []byte(state))
}

// hostQuestion is the result that asks the host's user about the pending
// request of snap (an input_required result with one form elicitation; a
// host of a protocol before 2026-07-28 is asked with elicitation/create by
// mcp-go, which calls the tool again with the answer), or nil when this call
// may not ask.
func hostQuestion(ctx context.Context, o AgentToolOptions, snap jobs.Snapshot) *mcp.CallToolResult {
	if o.Host == nil || !hostMayAsk(ctx) || snap.Status != jobs.StatusWaitingApproval || snap.Approval == nil {
		return nil
	}
	pr, err := o.Host.Request(snap.Approval.ID)
	now := o.now()
	if err != nil || pr.JobID != snap.ID || !now.Before(pr.Expires) {
		return nil
	}
	return mcpserver.NewInputRequestBuilder(signState(snap.ID, pr.ID)).Elicit(hostInputKey, hostQuestionParams(pr, snap, now)).ToolResult()
}

// hostQuestionParams is the form elicitation that asks the host's user
// about pr, a request of job snap: no fields, accept or decline.
func hostQuestionParams(pr approvals.PendingRequest, snap jobs.Snapshot, now time.Time) mcp.ElicitationParams {
	msg := fmt.Sprintf("A DeepSeek agent job asks to run this %s call:\n\n%s\n\nWorkspace: %s\nWhy a person decides: %s\nUnanswered, it is denied at %s (in %s).\n\nAccept allows this one call; decline denies it. `bridgectl approve %s` on the bridge's machine answers it too.",
		pr.Tool, pr.Summary, snap.Workspace, pr.Reason, pr.Expires.Local().Format(time.TimeOnly), pr.Expires.Sub(now).Round(time.Second), pr.ID)
	return mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// hostDecision is what the host's answer res decides: accept approves,
// and decline, cancel or no readable answer denies.
func hostDecision(res *mcp.ElicitationResult) (approve bool, reason string) {
	if res == nil {
		return false, "no readable answer from the MCP host: denied"
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		return true, "accepted in the MCP host"
	case mcp.ElicitationResponseActionDecline:
		return false, "declined in the MCP host"
	case mcp.ElicitationResponseActionCancel:
		return false, "cancelled in the MCP host: denied"
	}
	return false, "no readable answer from the MCP host: denied"
}

// applyHostAnswer decides the request a call's answer is for, when the call
// carries one for jobID: accept approves it, and decline, cancel or an
// unreadable answer denies it. It returns the request's id ("" when the
// call carries no answer), and a refusal for an answer this call may not
// give (a transport the owner did not open to host approvals, or a state
// this daemon did not sign for this job).
func applyHostAnswer(ctx context.Context, o AgentToolOptions, req mcp.CallToolRequest, jobID string) (string, *mcp.CallToolResult) {
	rt := req.Params.MultiRoundTripParams
	if rt.RequestState == "" && len(rt.InputResponses) == 0 {
		return "", nil
	}
	sj, id, ok := verifyState(rt.RequestState)
	switch {
	case o.Host == nil || !hostMayAsk(ctx):
		return "", mcp.NewToolResultError("This call carries an answer to an approval question, but approvals are not answered from the MCP host on this connection (BRIDGE_HOST_APPROVALS); nothing was decided. The owner answers with `bridgectl approve` or `bridgectl deny`.")
	case !ok || sj != jobID:
		return "", mcp.NewToolResultError("This call carries an answer to an approval question the bridge did not ask about this job; nothing was decided.")
	}
	approve, reason := hostDecision(mcpserver.ElicitationResponse(rt.InputResponses, hostInputKey))
	err := o.Host.DecideVia(id, approve, reason, HostUser, approvals.ChannelHost)
	switch {
	case err == nil, errors.Is(err, approvals.ErrAlreadyDecided), errors.Is(err, approvals.ErrExpired):
		// Decided now, or answered first elsewhere: the first answer stands,
		// and the poll reports the job as it goes on.
		return id, nil
	}
	return id, mcp.NewToolResultError("The answer to approval " + id + " could not be recorded (" + err.Error() + "); it stays pending: answer it with `bridgectl approve " + id + "` or `bridgectl deny " + id + "`.")
}

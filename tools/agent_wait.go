package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// waitInline waits up to the sync window for a job just accepted, with
// progress, and answers with its state then.
func waitInline(ctx context.Context, req mcp.CallToolRequest, j AgentJobs, o AgentToolOptions, snap jobs.Snapshot) *mcp.CallToolResult {
	p := newProgress(ctx, req, o)
	defer p.stop()
	p.report(snap)
	// The job belongs to the registry: the caller hanging up ends this wait, not the job.
	wctx, onChange, cancel := untilApproval(ctx, p.report)
	defer cancel()
	final, err := j.Wait(wctx, snap.ID, o.SyncWindow, onChange)
	if err != nil {
		return mcp.NewToolResultError(err.Error())
	}
	return agentResult(final, o.now())
}

// untilApproval makes a wait end early once the job starts waiting for a
// human — the caller should tell the user now, not at the end of the wait —
// and passes every change to report. Call cancel when the wait is over.
func untilApproval(ctx context.Context, report func(jobs.Snapshot)) (wctx context.Context, onChange func(jobs.Snapshot), cancel context.CancelFunc) {
	wctx, cancel = context.WithCancel(ctx)
	return wctx, func(s jobs.Snapshot) {
		report(s)
		if s.Status == jobs.StatusWaitingApproval {
			cancel()
		}
	}, cancel
}

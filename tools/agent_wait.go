package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// waitInline waits up to the sync window for a job just accepted, with
// progress, and answers with its state then; a task's call waits for the
// job's end (waitTask).
func waitInline(ctx context.Context, req mcp.CallToolRequest, j AgentJobs, o AgentToolOptions, snap jobs.Snapshot) *mcp.CallToolResult {
	if bind := taskBind(ctx); bind != nil { // a task's call: its answer was the task
		bind(snap.ID)
		return waitTask(ctx, j, o, snap)
	}
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
	return agentResult(ctx, o, final)
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

// untilChange makes a poll's wait end early when the job's state or its
// pending request changes from what it was when the poll began: a job that
// starts waiting for a human, a human's answer (waiting → running), or a
// new request. A job already waiting for a human keeps the poll waiting
// for the person, up to the whole wait, instead of answering at once and
// making the host spin its turns. Every change goes to report.
func untilChange(ctx context.Context, report func(jobs.Snapshot)) (wctx context.Context, onChange func(jobs.Snapshot), cancel context.CancelFunc) {
	wctx, cancel = context.WithCancel(ctx)
	var first *jobs.Snapshot
	return wctx, func(s jobs.Snapshot) {
		report(s)
		if first == nil { // Wait's first call: the state the poll began in
			first = &s
			return
		}
		if s.Status != first.Status && (s.Status == jobs.StatusWaitingApproval || first.Status == jobs.StatusWaitingApproval) ||
			s.Status == jobs.StatusWaitingApproval && approvalID(s) != approvalID(*first) {
			cancel()
		}
	}, cancel
}

func approvalID(s jobs.Snapshot) string {
	if s.Approval == nil {
		return ""
	}
	return s.Approval.ID
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// fakeFlash is a FlashClient whose behaviour the test sets.
type fakeFlash struct {
	fn func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error)
}

func (f *fakeFlash) Flash(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
	if f.fn == nil {
		return deepseek.FlashResult{Answer: "fake answer to: " + req.Task, Model: "deepseek-flash", FinishReason: "stop"}, nil
	}
	return f.fn(ctx, req)
}

// fakeJobs is an AgentJobs whose answers the test sets.
type fakeJobs struct {
	mu          sync.Mutex
	startErr    error
	startSnap   jobs.Snapshot
	waitSnaps   map[string]jobs.Snapshot
	waitErr     error
	changes     []jobs.Snapshot // fed to onChange during Wait
	gotWait     []time.Duration
	gotStart    []jobs.StartRequest
	cancelled   []string
	cancelledBy []jobs.StopReason
}

func (f *fakeJobs) Start(ctx context.Context, req jobs.StartRequest) (jobs.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gotStart = append(f.gotStart, req)
	return f.startSnap, f.startErr
}

func (f *fakeJobs) Wait(ctx context.Context, id string, d time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error) {
	f.mu.Lock()
	f.gotWait = append(f.gotWait, d)
	s, ok := f.waitSnaps[id]
	changes := f.changes
	f.mu.Unlock()
	if f.waitErr != nil {
		return jobs.Snapshot{}, f.waitErr
	}
	if !ok {
		return jobs.Snapshot{}, fmt.Errorf("%w %q: it never existed here or its results expired; start a new job with deepseek_agent_start", jobs.ErrUnknownJob, id)
	}
	for _, c := range changes {
		onChange(c)
		if ctx.Err() != nil { // the caller stopped waiting: the state of that moment
			return c, nil
		}
	}
	return s, nil
}

func (f *fakeJobs) CancelBy(ctx context.Context, id string, by jobs.StopReason) (jobs.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	f.cancelledBy = append(f.cancelledBy, by)
	s, ok := f.waitSnaps[id]
	if !ok {
		return jobs.Snapshot{}, fmt.Errorf("%w %q", jobs.ErrUnknownJob, id)
	}
	s.Status, s.StopReason = jobs.StatusCancelled, by
	s.Error = "cancelled by the caller"
	s.Partial = &jobs.Partial{Label: jobs.PartialLabel}
	return s, nil
}

const jobID = "0123456789abcdef0123456789abcdef"

func snap(status jobs.Status) jobs.Snapshot {
	created := time.Now().Add(-3 * time.Second)
	s := jobs.Snapshot{ID: jobID, Status: status, CreatedAt: created, Steps: 2, LastTool: "Bash: ls",
		FilesWritten: []string{"/ws/answer.txt"}, Commands: []jobs.Command{{Command: "ls", ExitCode: intp(0)}, {Command: "rm -rf /", Denied: true}},
		Usage: jobs.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.0001}
	switch status {
	case jobs.StatusDone:
		s.Nonce, s.Result = "fedcba9876543210fedcba9876543210", "the reversed witness is in answer.txt"
	case jobs.StatusError, jobs.StatusCancelled, jobs.StatusInterrupted:
		s.Error = "the job hit its step ceiling of 2 tool calls and was stopped"
		s.Partial = &jobs.Partial{Label: jobs.PartialLabel, Notes: []string{"half way"}, ToolCalls: map[string]int{"Read": 1, "Bash": 2}}
		s.Nonce, s.Result = "leaked", "leaked" // Payload must drop them
	case jobs.StatusWaitingApproval:
		s.Approval = &jobs.ApprovalInfo{ID: "ap-7", Summary: "Bash: make deploy"}
	case jobs.StatusQueued:
		s.QueuePosition = 2
	}
	return s
}

func intp(n int) *int { return &n }

func call(t *testing.T, h mcpserver.ToolHandlerFunc, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Arguments = args
	res, err := h(t.Context(), req)
	if err != nil {
		t.Fatalf("handler returned a Go error: %v", err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return res, text
}

func payloadOf(t *testing.T, res *mcp.CallToolResult) AgentJobPayload {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p AgentJobPayload
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

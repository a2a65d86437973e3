package tools

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

func TestProgressIsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		var nums []int
		p := startProgress(t.Context(), AgentToolOptions{}.withDefaults(), func(n int, msg string) {
			mu.Lock()
			defer mu.Unlock()
			nums = append(nums, n)
			sent = append(sent, msg)
		})
		s := snap(jobs.StatusRunning)
		for i := range 20 { // a burst: one notification now, the latest one a second later
			s.Steps = i + 1
			p.report(s)
			synctest.Wait()
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		time.Sleep(10 * time.Second) // nothing changes: nothing more from here (the server keeps the stream alive)
		synctest.Wait()
		p.stop()
		mu.Lock()
		defer mu.Unlock()
		if len(sent) != 2 || !strings.Contains(sent[0], "1 tool call,") || !strings.Contains(sent[1], "20 tool calls, last Bash: ls") {
			t.Errorf("burst sent %q", sent)
		}
		if len(nums) == 2 && nums[1] <= nums[0] {
			t.Errorf("progress not increasing: %v", nums)
		}
	})
}

// recordingReporter is a Reporter that keeps what it is told and closes
// first at its first report.
type recordingReporter struct {
	mu    sync.Mutex
	msgs  []string
	first chan struct{}
}

func (r *recordingReporter) Report(_, _ float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) == 0 {
		close(r.first)
	}
	r.msgs = append(r.msgs, msg)
}

func (r *recordingReporter) Done(msg string) { r.Report(0, 0, msg) }

// reportedJobs is an AgentJobs whose Wait sees the job running, then (when
// until is set) waits for that to be reported before it ends done.
type reportedJobs struct {
	noJobs
	until <-chan struct{}
}

func (j reportedJobs) Wait(ctx context.Context, _ string, _ time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error) {
	onChange(snap(jobs.StatusRunning))
	if j.until != nil {
		select {
		case <-j.until:
		case <-ctx.Done():
		}
	}
	return snap(jobs.StatusDone), nil
}

// TestProgressGoesThroughTheCallsReporter: a blocking agent call reports
// through the Reporter its context carries, and only when the caller asked
// for progress; without one in the context nothing is sent anywhere.
func TestProgressGoesThroughTheCallsReporter(t *testing.T) {
	for _, token := range []mcp.ProgressToken{"tok", nil} {
		rep := &recordingReporter{first: make(chan struct{})}
		j := reportedJobs{}
		req := mcp.CallToolRequest{}
		req.Params.Arguments = map[string]any{"job_id": jobID}
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
			j.until = rep.first
		}
		_, h := AgentPollTool(j, AgentToolOptions{})
		ctx, cancel := context.WithTimeout(WithReporter(t.Context(), rep), 10*time.Second)
		res, err := h(ctx, req)
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("poll: %v %+v", err, res)
		}
		rep.mu.Lock()
		got := rep.msgs
		rep.mu.Unlock()
		if token != nil && (len(got) != 1 || !strings.Contains(got[0], "job "+jobID+" running: 2 tool calls")) {
			t.Errorf("with a token: reported %q", got)
		}
		if token == nil && len(got) != 0 {
			t.Errorf("without a token: reported %q", got)
		}
	}
	reporterFrom(t.Context()).Report(1, 2, "no reporter: goes nowhere")
	reporterFrom(t.Context()).Done("no reporter")
}

package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// upstreamGateway reports an upstream error class on Close, as the model
// proxy does when DeepSeek's last answer to the job was an error.
type upstreamGateway struct {
	DirectGateway
	class string
}

func (g upstreamGateway) Close(string) (Metered, error) { return Metered{UpstreamError: g.class}, nil }

// Every way a job ends gives its own stop_reason, and its status follows
// from it: on disk and in what Wait returns.
func TestStopReasonOfEveryEnd(t *testing.T) {
	timedOut := harness.Event{Kind: harness.KindToolResult, ToolResult: &harness.ToolResult{
		ToolUseID: "b1", IsError: true, Denied: true, Text: approvals.TimeoutReasonPrefix + " 5m0s"}}
	cases := []struct {
		name  string
		mod   func(*Options)
		drive func(e *env, r *fakeRun, id string)
		want  StopReason
		class string
		text  string // in the job's error
	}{
		{"done", nil, func(e *env, r *fakeRun, id string) {
			r.send(evResult("success", false, "ok"))
			r.end(harness.Exit{})
		}, StopCompleted, "", ""},
		{"step ceiling", func(o *Options) { o.MaxSteps = 1 }, func(e *env, r *fakeRun, id string) {
			r.send(evToolUse("b1", "Bash", "ls"), evToolUse("b2", "Bash", "ls"))
		}, StopStepCeiling, "", "step ceiling of 1"},
		{"time ceiling", func(o *Options) { o.JobTimeout = 50 * time.Millisecond }, func(*env, *fakeRun, string) {},
			StopTimeCeiling, "", "wall-clock ceiling"},
		{"budget", nil, func(e *env, r *fakeRun, id string) {
			e.r.Abort(id, Stop{Reason: StopBudgetCeiling, Text: "budget exceeded: $1"})
		}, StopBudgetCeiling, "", "budget exceeded"},
		{"daily budget", nil, func(e *env, r *fakeRun, id string) {
			e.r.Abort(id, Stop{Reason: StopDailyBudget, Text: "all jobs together spent"})
		}, StopDailyBudget, "", "all jobs together"},
		{"key rejected", nil, func(e *env, r *fakeRun, id string) {
			e.r.Abort(id, Stop{Reason: StopModelError, Class: ModelKeyRejected, Text: "key rejected"})
		}, StopModelError, ModelKeyRejected, "key rejected"},
		{"caller cancel", nil, func(e *env, r *fakeRun, id string) {
			go e.r.Cancel(context.Background(), id)
		}, StopCancelledByCaller, "", "cancelled by the caller"},
		{"owner cancel", nil, func(e *env, r *fakeRun, id string) {
			go e.r.CancelBy(context.Background(), id, StopCancelledByOwner)
		}, StopCancelledByOwner, "", "cancelled by the owner"},
		{"shutdown", nil, func(e *env, r *fakeRun, id string) {
			go e.r.Close(context.Background())
		}, StopInterruptedByRestart, "", "shut down"},
		{"error result", nil, func(e *env, r *fakeRun, id string) {
			r.send(evResult("error_during_execution", true, "it broke"))
			r.end(harness.Exit{Code: 1})
		}, StopNoResult, "", "it broke"},
		{"no result line", nil, func(e *env, r *fakeRun, id string) {
			r.end(harness.Exit{Code: 2, Stderr: "segfault"})
		}, StopHarnessFailed, "", "without a result"},
		{"rate limited", func(o *Options) {
			o.Gateway = upstreamGateway{DirectGateway: o.Gateway.(DirectGateway), class: ModelRateLimit}
		}, func(e *env, r *fakeRun, id string) {
			r.send(evResult("success", true, "API Error: 429"))
			r.end(harness.Exit{Code: 1})
		}, StopModelError, ModelRateLimit, "DeepSeek's last answer to it was an error: rate_limit"},
		{"approval timeout", nil, func(e *env, r *fakeRun, id string) {
			r.send(evToolUse("b1", "Bash", "rm -rf build"), timedOut, evResult("error_max_turns", true, ""))
			r.end(harness.Exit{Code: 1})
		}, StopApprovalTimeout, "", "got no answer in time"},
		{"process limit", nil, func(e *env, r *fakeRun, id string) {
			r.end(harness.Exit{Code: -1, Signal: "killed", Limit: &harness.Breach{Bound: harness.BoundProcesses, Seen: 2049, Limit: 2048}})
		}, StopProcessLimit, "", "reached 2049, past its bound of 2048 (BRIDGE_JOB_MAX_PROCESSES), so every process of the job was killed"},
		{"memory limit", nil, func(e *env, r *fakeRun, id string) {
			r.end(harness.Exit{Code: -1, Signal: "killed", Limit: &harness.Breach{Bound: harness.BoundMemory, Seen: 5 << 30, Limit: 4 << 30}})
		}, StopMemoryLimit, "", "held 5120 MiB of memory, past its bound of 4096 MiB (BRIDGE_JOB_MAX_MEMORY_MB)"},
		{"disk limit", nil, func(e *env, r *fakeRun, id string) {
			r.end(harness.Exit{Code: -1, Signal: "killed", Limit: &harness.Breach{Bound: harness.BoundDisk, Seen: 11 << 30, Limit: 10 << 30}})
		}, StopDiskLimit, "", "took 11264 MiB of disk, past its bound of 10240 MiB (BRIDGE_JOB_MAX_DISK_MB)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.mod)
			s := e.start("x")
			r := e.nextRun()
			c.drive(e, r, s.ID)
			got := e.settle(s.ID)
			disk := e.onDisk(s.ID)
			for _, g := range []Snapshot{got, disk} {
				if g.StopReason != c.want || g.Status != StatusOf(c.want) || g.ModelError != c.class {
					t.Fatalf("stop_reason %q model_error %q status %s; want %q %q %s (error %q)", g.StopReason, g.ModelError, g.Status, c.want, c.class, StatusOf(c.want), g.Error)
				}
				if !strings.Contains(g.Error, c.text) {
					t.Errorf("error %q lacks %q", g.Error, c.text)
				}
			}
		})
	}
	covered := map[StopReason]bool{}
	for _, c := range cases {
		covered[c.want] = true
	}
	for _, r := range StopReasons {
		if !covered[r] {
			t.Errorf("no case ends a job with %s", r)
		}
	}
}

// A failed command counts as unresolved until the same command succeeds;
// a denied one never ran and is no failure; the order is the first failure's.
func TestUnresolvedFailures(t *testing.T) {
	cmd := func(c string, code int) Command { return Command{Command: c, ExitCode: intp(code)} }
	cmds := []Command{
		cmd("go test ./...", 1),
		cmd("make lint", 2),
		cmd("go test ./...", 0),
		{Command: "rm -rf /", Denied: true},
		cmd("go vet ./...", 0),
		cmd("go vet ./...", 1),
		{Command: "npm test", Note: notePrefixFailed + "spawn failed"},
		cmd("make lint", 2),
	}
	got := UnresolvedFailures(cmds)
	if want := []string{"make lint", "go vet ./...", "npm test"}; !slices.Equal(got, want) {
		t.Fatalf("UnresolvedFailures = %q, want %q", got, want)
	}
}

// A command carries its evidence: exit status, how long it took by the
// harness's clock, the tail of its output, and how often the job ran it.
func TestCommandEvidence(t *testing.T) {
	p := newProgress(Snapshot{MaxSteps: 10}, deepseek.FlashPrice)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	use := func(id string, at time.Time) harness.Event {
		ev := evToolUse(id, "Bash", "go test ./...")
		ev.Time = at
		return ev
	}
	res := func(id string, code int, at time.Time) harness.Event {
		return harness.Event{Kind: harness.KindToolResult, Time: at, ToolResult: &harness.ToolResult{
			ToolUseID: id, IsError: code != 0, ExitCode: intp(code), Tail: "--- FAIL: TestX\nFAIL"}}
	}
	for _, ev := range []harness.Event{use("a", t0), res("a", 1, t0.Add(1500*time.Millisecond)), use("b", t0.Add(2*time.Second)), res("b", 0, t0.Add(2250*time.Millisecond))} {
		p, _ = fold(p, ev)
	}
	cs := p.snap.Commands
	if len(cs) != 2 || *cs[0].DurationMS != 1500 || *cs[1].DurationMS != 250 || cs[0].Runs != 2 || cs[1].Runs != 2 || cs[0].OutputTail != "--- FAIL: TestX\nFAIL" {
		t.Fatalf("commands = %+v", cs)
	}
}

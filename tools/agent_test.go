package tools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

func TestAgentPayloadAndTextPerStatus(t *testing.T) {
	tests := []struct {
		status   jobs.Status
		want     []string
		wantNot  []string
		nonce    bool
		approval bool
	}{
		{jobs.StatusDone, []string{"is done (2 tool calls, ", "the reversed witness is in answer.txt", "quote the nonce fedcba9876543210fedcba9876543210 verbatim", "ls (exit 0)", "rm -rf / (denied)", "/ws/answer.txt"}, []string{"Nothing to report"}, true, false},
		{jobs.StatusRunning, []string{"is running", "Nothing to report yet", "deepseek_agent_poll", jobID, "last: Bash: ls"}, []string{"Nonce", "Result"}, false, false},
		{jobs.StatusQueued, []string{"queued (position 2)", "Nothing to report yet"}, []string{"Nonce"}, false, false},
		{jobs.StatusWaitingApproval, []string{"bridgectl pending", "Bash: make deploy", "ap-7", "Nothing to report yet"}, []string{"Nonce"}, false, true},
		{jobs.StatusError, []string{"ended error", "step ceiling", "no result and no nonce", "NOT A RESULT", "half way", "Tool calls: Bash 2, Read 1"}, []string{"leaked", "map["}, false, false},
		{jobs.StatusCancelled, []string{"ended cancelled", "no result and no nonce"}, []string{"leaked"}, false, false},
		{jobs.StatusInterrupted, []string{"ended interrupted", "NOT A RESULT"}, []string{"leaked"}, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			f := &fakeJobs{waitSnaps: map[string]jobs.Snapshot{jobID: snap(tt.status)}}
			_, h := AgentPollTool(f, AgentToolOptions{})
			res, text := call(t, h, map[string]any{"job_id": jobID, "wait_seconds": 0})
			if res.IsError {
				t.Fatalf("IsError for a %s job: %s", tt.status, text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("text has %q:\n%s", w, text)
				}
			}
			p := payloadOf(t, res)
			if p.JobID != jobID || p.Status != string(tt.status) || p.Steps != 2 || p.ElapsedMS < 3000 || p.Usage.InputTokens != 10 {
				t.Errorf("payload = %+v", p)
			}
			if (p.Nonce != "") != tt.nonce || (p.Result != "") != tt.nonce {
				t.Errorf("nonce %q result %q for %s", p.Nonce, p.Result, tt.status)
			}
			if (p.Approval != nil) != tt.approval {
				t.Errorf("approval = %+v", p.Approval)
			}
			if len(p.Commands) != 2 || p.Commands[0].ExitCode == nil || *p.Commands[0].ExitCode != 0 || !p.Commands[1].Denied {
				t.Errorf("commands = %+v", p.Commands)
			}
		})
	}
}

func TestAgentStartInlineAndPending(t *testing.T) {
	t.Run("done within the sync window comes back inline", func(t *testing.T) {
		f := &fakeJobs{startSnap: snap(jobs.StatusRunning), waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusDone)}}
		_, h := AgentStartTool(f, AgentToolOptions{SyncWindow: 7 * time.Second})
		res, text := call(t, h, map[string]any{"task": "reverse it", "workspace": "/ws", "max_steps": 5, "timeout_seconds": 60})
		if res.IsError || payloadOf(t, res).Nonce == "" || !strings.Contains(text, "quote the nonce") {
			t.Fatalf("res = %v %s", res.IsError, text)
		}
		if got := f.gotStart[0]; got.Task != "reverse it" || got.Workspace != "/ws" || got.MaxSteps != 5 || got.Timeout != time.Minute {
			t.Errorf("start request = %+v", got)
		}
		if f.gotWait[0] != 7*time.Second {
			t.Errorf("sync window = %v", f.gotWait[0])
		}
	})
	t.Run("still running returns the id", func(t *testing.T) {
		f := &fakeJobs{startSnap: snap(jobs.StatusRunning), waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
		_, h := AgentStartTool(f, AgentToolOptions{})
		res, text := call(t, h, map[string]any{"task": "x", "workspace": "/ws"})
		if res.IsError || payloadOf(t, res).JobID != jobID || !strings.Contains(text, "Nothing to report yet") {
			t.Fatalf("res = %s", text)
		}
	})
}

func TestAgentToolErrorsSayWhatToDo(t *testing.T) {
	refused := fmt.Errorf("%w: no workspace is allowed because DEEPSEEK_ALLOWED_ROOTS is empty. Ask the owner to grant a root", jobs.ErrWorkspace)
	tests := []struct {
		name string
		tool func(AgentJobs, AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc)
		f    *fakeJobs
		args map[string]any
		want []string
	}{
		{"refused workspace", AgentStartTool, &fakeJobs{startErr: refused}, map[string]any{"task": "x", "workspace": "/etc"}, []string{"not started", "DEEPSEEK_ALLOWED_ROOTS is empty", "grant a root"}},
		{"queue full", AgentStartTool, &fakeJobs{startErr: fmt.Errorf("%w: try again when one has finished", jobs.ErrQueueFull)}, map[string]any{"task": "x", "workspace": "/ws"}, []string{"queue is full", "try again"}},
		{"unknown job on poll", AgentPollTool, &fakeJobs{}, map[string]any{"job_id": "nope"}, []string{"unknown job id", "deepseek_agent_start", "BRIDGE_RESULT_TTL_MS"}},
		{"unknown job on cancel", AgentCancelTool, &fakeJobs{}, map[string]any{"job_id": "nope"}, []string{"unknown job id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := tt.tool(tt.f, AgentToolOptions{})
			res, text := call(t, h, tt.args)
			if !res.IsError {
				t.Fatalf("not an error result: %s", text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
		})
	}
}

// TestAgentPollWait: a wait inside 0–40 s is the wait asked for; outside it
// is refused (server TestArgsRefused).
func TestAgentPollWait(t *testing.T) {
	tests := []struct {
		args map[string]any
		want time.Duration
	}{
		{map[string]any{"job_id": jobID}, 20 * time.Second},
		{map[string]any{"job_id": jobID, "wait_seconds": 0}, 0},
		{map[string]any{"job_id": jobID, "wait_seconds": 5}, 5 * time.Second},
		{map[string]any{"job_id": jobID, "wait_seconds": 2.5}, 2500 * time.Millisecond},
		{map[string]any{"job_id": jobID, "wait_seconds": 40}, 40 * time.Second},
	}
	for _, tt := range tests {
		f := &fakeJobs{waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
		_, h := AgentPollTool(f, AgentToolOptions{})
		call(t, h, tt.args)
		if f.gotWait[0] != tt.want {
			t.Errorf("%v: waited %v, want %v", tt.args, f.gotWait[0], tt.want)
		}
	}
}

func TestAgentCancel(t *testing.T) {
	f := &fakeJobs{waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusRunning)}}
	_, h := AgentCancelTool(f, AgentToolOptions{})
	res, text := call(t, h, map[string]any{"job_id": " " + jobID + " "})
	p := payloadOf(t, res)
	if res.IsError || p.Status != "cancelled" || p.Nonce != "" || !strings.Contains(text, "ended cancelled") || f.cancelled[0] != jobID {
		t.Fatalf("cancel = %+v %s", p, text)
	}
}

func TestAgentWaitEndsWhenApprovalIsNeeded(t *testing.T) {
	for _, c := range []struct {
		mk   func(AgentJobs, AgentToolOptions) (mcp.Tool, mcpserver.ToolHandlerFunc)
		args map[string]any
	}{
		{AgentStartTool, map[string]any{"task": "x", "workspace": "/ws"}},
		{AgentPollTool, map[string]any{"job_id": jobID}},
	} {
		f := &fakeJobs{
			startSnap: snap(jobs.StatusRunning),
			waitSnaps: map[string]jobs.Snapshot{jobID: snap(jobs.StatusDone)}, // what a full wait would have given
			changes:   []jobs.Snapshot{snap(jobs.StatusRunning), snap(jobs.StatusWaitingApproval), snap(jobs.StatusRunning)},
		}
		tool, h := c.mk(f, AgentToolOptions{})
		res, text := call(t, h, c.args)
		if p := payloadOf(t, res); p.Status != "waiting_approval" || p.Approval == nil || !strings.Contains(text, "bridgectl pending") {
			t.Errorf("%s: status %s: %s", tool.Name, p.Status, text)
		}
	}
}

// The payload carries the model, thinking, the enforced policy and the last
// 50 ledger entries with the total; the text names every refused call.
func TestPayloadLedgerAndRefusals(t *testing.T) {
	s := snap(jobs.StatusDone)
	s.Model, s.Thinking = "deepseek-v4-pro", "off"
	e := policy.Merge(policy.Policy{}, policy.Policy{Tools: []string{"Read"}}, "")
	s.Policy = &e
	for i := range 60 {
		s.Ledger = append(s.Ledger, jobs.LedgerEntry{Tool: "Read", Summary: fmt.Sprintf("Read f%d", i), Verdict: policy.AllowedByRule, Reason: "inside"})
	}
	s.Ledger = append(s.Ledger, jobs.LedgerEntry{Tool: "Bash", Summary: "Bash: ls", Verdict: policy.NotOffered, Reason: "the job's policy does not offer Bash"})
	s.LedgerTotal = 61
	p := Payload(s, time.Now())
	if len(p.Ledger) != 50 || p.LedgerTotal != 61 || p.Ledger[49].Tool != "Bash" || p.Model != "deepseek-v4-pro" || p.Thinking != "off" || p.Policy.Floor != "none" {
		t.Errorf("payload ledger %d total %d model %s thinking %s policy %+v", len(p.Ledger), p.LedgerTotal, p.Model, p.Thinking, p.Policy)
	}
	if txt := AgentText(p); !strings.Contains(txt, "Refused (not_offered): Bash: ls — the job's policy does not offer Bash") || strings.Contains(txt, "Refused (allowed") {
		t.Errorf("text:\n%s", txt)
	}
}

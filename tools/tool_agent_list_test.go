package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

type listedJobs []jobs.Snapshot

func (l listedJobs) List() []jobs.Snapshot { return l }

// deepseek_agent_list shows every job of the registry, newest first, filtered
// by status and cut to the limit (total says how many matched), without any
// result or nonce. (A status it does not know is refused: server TestArgsRefused.)
func TestAgentListTool(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("x", 300)
	reg := listedJobs{ // oldest first, as the registry lists
		{ID: "job-a", Status: jobs.StatusDone, Task: "first", Workspace: "/ws/a", Steps: 3, CreatedAt: t0, Nonce: "n-secret-to-poll", Result: "r"},
		{ID: "job-b", Status: jobs.StatusRunning, Task: long, Workspace: "/ws/b", Steps: 1, CreatedAt: t0.Add(time.Minute)},
		{ID: "job-c", Status: jobs.StatusRunning, Task: "third", Workspace: "/ws/c", CreatedAt: t0.Add(2 * time.Minute)},
	}
	_, h := AgentListTool(reg)
	call := func(args map[string]any) (*mcp.CallToolResult, AgentListOutput) {
		t.Helper()
		res, err := h(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "deepseek_agent_list", Arguments: args}})
		if err != nil {
			t.Fatal(err)
		}
		var out AgentListOutput
		if !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
		}
		return res, out
	}
	ids := func(o AgentListOutput) string {
		var s []string
		for _, j := range o.Jobs {
			s = append(s, j.JobID)
		}
		return strings.Join(s, ",")
	}

	res, out := call(nil)
	if res.IsError || ids(out) != "job-c,job-b,job-a" || out.Total != 3 {
		t.Fatalf("all: %s total %d", ids(out), out.Total)
	}
	if b := out.Jobs[1]; len([]rune(b.Task)) != listTaskChars || !strings.HasSuffix(b.Task, "…") || b.Workspace != "/ws/b" || b.CreatedAt != "2026-01-02T03:05:05Z" {
		t.Errorf("job-b entry: %+v", b)
	}
	if raw, _ := json.Marshal(res.StructuredContent); strings.Contains(string(raw), "n-secret-to-poll") || strings.Contains(string(raw), `"result"`) {
		t.Errorf("the list carries a nonce or a result: %s", raw)
	}
	if _, out = call(map[string]any{"status": "running", "limit": 1}); ids(out) != "job-c" || out.Total != 2 {
		t.Errorf("running, limit 1: %s total %d", ids(out), out.Total)
	}
	if res, out = call(map[string]any{"status": "cancelled"}); len(out.Jobs) != 0 || out.Total != 0 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "no agent jobs with status cancelled") {
		t.Errorf("cancelled: %+v %+v", out, res.Content)
	}
}

// Each entry carries its model, elapsed time, cost, parent, children and
// whether it can be continued; children are told from the parents recorded.
func TestAgentListSessions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := t0.Add(90 * time.Second)
	reg := listedJobs{
		{ID: "job-a", Status: jobs.StatusError, StopReason: jobs.StopStepCeiling, SessionID: "s1", Model: "deepseek-flash", CostUSD: 0.25, CreatedAt: t0, EndedAt: &end},
		{ID: "job-b", Status: jobs.StatusCancelled, SessionID: "s1", Parent: "job-a", CreatedAt: t0.Add(2 * time.Minute), EndedAt: &end},
		{ID: "job-c", Status: jobs.StatusRunning, Parent: "job-a", SessionID: "s1", CreatedAt: t0.Add(3 * time.Minute)},
		{ID: "job-d", Status: jobs.StatusError, StopReason: jobs.StopHarnessFailed, CreatedAt: t0.Add(4 * time.Minute), EndedAt: &end},
	}
	_, h := AgentListTool(reg)
	res, err := h(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "deepseek_agent_list"}})
	if err != nil || res.IsError {
		t.Fatalf("list: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out AgentListOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	byID := map[string]AgentListEntry{}
	for _, e := range out.Jobs {
		byID[e.JobID] = e
	}
	a := byID["job-a"]
	if a.Model != "deepseek-flash" || a.CostUSD != 0.25 || a.ElapsedMS != 90000 || !a.CanContinue || strings.Join(a.Children, ",") != "job-b,job-c" || a.Parent != "" {
		t.Errorf("job-a = %+v", a)
	}
	if c := byID["job-c"]; c.Parent != "job-a" || c.CanContinue || len(c.Children) != 0 {
		t.Errorf("job-c (running) = %+v", c)
	}
	if d := byID["job-d"]; d.CanContinue {
		t.Errorf("job-d never began a session but can_continue: %+v", d)
	}
	text := res.Content[0].(mcp.TextContent).Text
	if !strings.Contains(text, "continued by job-b, job-c") || !strings.Contains(text, "continues job-a") {
		t.Errorf("text:\n%s", text)
	}
}

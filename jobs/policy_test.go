package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// The floor is merged over the caller's policy at Start: the job is offered
// the intersection of their tools, runs under the smaller caps, and the
// harness gets the model, thinking level and contract text of the call.
func TestStartMergesTheFloor(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Floor = policy.Policy{Tools: []string{"Read", "Grep", "Glob", "Write"}, MaxSteps: 5, AppendSystemPrompt: "Owner rules."}
		o.FloorFile = "/etc/bridge/floor.json"
	})
	s, err := e.r.Start(t.Context(), StartRequest{Task: "t", Workspace: e.ws, Model: "deepseek-v4-pro", Thinking: "low",
		Policy: &policy.Policy{Tools: []string{"Bash", "Read"}, MaxSteps: 50, TimeoutSeconds: 60, AppendSystemPrompt: "Report in JSON."}})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxSteps != 5 || s.TimeoutMS != 60_000 || s.Model != "deepseek-v4-pro" || s.Thinking != "low" {
		t.Errorf("snapshot max_steps %d timeout %d model %s thinking %s", s.MaxSteps, s.TimeoutMS, s.Model, s.Thinking)
	}
	if s.Policy == nil || !slices.Equal(s.Policy.Tools, []string{"Read"}) || s.Policy.Floor != "/etc/bridge/floor.json" {
		t.Errorf("enforced = %+v", s.Policy)
	}
	run := e.nextRun()
	sp := run.spec
	if !slices.Equal(sp.Tools, []string{"Read"}) || sp.Model != "deepseek-v4-pro" || sp.Thinking != "low" ||
		sp.AppendSystemPrompt != "Owner rules.\n\nReport in JSON." || sp.Policy == nil {
		t.Errorf("harness spec tools %v model %s thinking %s prompt %q policy %v", sp.Tools, sp.Model, sp.Thinking, sp.AppendSystemPrompt, sp.Policy)
	}
	e.succeed(run, s.ID)
}

func TestStartRequiresAPolicyWhenTold(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RequirePolicy = true })
	_, err := e.r.Start(t.Context(), StartRequest{Task: "t", Workspace: e.ws})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "BRIDGE_REQUIRE_POLICY") {
		t.Errorf("Start without a policy = %v", err)
	}
	_, err = e.r.Start(t.Context(), StartRequest{Task: "t", Workspace: e.ws, Policy: &policy.Policy{Network: "maybe"}})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `network: must be "ask" or "deny"`) {
		t.Errorf("Start with an invalid policy = %v", err)
	}
}

// The ledger takes the approval child's verdict for each call, a call of a
// tool the job was not offered as not offered, and carries the count; the
// trace has every entry. A policy's max_cost_usd stops the job.
func TestLedgerAndCostCap(t *testing.T) {
	e := newEnv(t, nil)
	s, err := e.r.Start(t.Context(), StartRequest{Task: "t", Workspace: e.ws,
		Policy: &policy.Policy{Tools: []string{"Read", "Write"}, MaxCostUSD: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	run := e.nextRun()
	ledger := e.r.opts.Dir.LedgerFile(s.ID)
	if err := os.MkdirAll(filepath.Dir(ledger), 0o700); err != nil { // the guard makes it
		t.Fatal(err)
	}
	lines := `{"tool_use_id":"u1","tool":"Read","summary":"Read a","verdict":"allowed_by_rule","reason":"inside"}` + "\n" +
		`{"tool_use_id":"u2","tool":"Write","summary":"Write b","verdict":"denied_by_policy","reason":"the job's policy: b is outside write_paths"}` + "\n"
	if err := os.WriteFile(ledger, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	run.send(evToolUse("u1", "Read", "a"), evToolResult("u1", false, nil),
		evToolUse("u2", "Write", "b"), harness.Event{Kind: harness.KindToolResult, ToolResult: &harness.ToolResult{ToolUseID: "u2", IsError: true, Denied: true, Text: "denied"}},
		evToolUse("u3", "Bash", "rm -rf ."), evToolResult("u3", true, nil))
	// 10k output tokens at flash prices pass $0.001: the job is stopped.
	run.send(harness.Event{Kind: harness.KindUsage, MessageID: "m1", Usage: &harness.Usage{OutputTokens: 10_000}})
	got := e.settle(s.ID)
	want := []string{"Read " + policy.AllowedByRule, "Write " + policy.DeniedByPolicy, "Bash " + policy.NotOffered}
	var have []string
	for _, l := range got.Ledger {
		have = append(have, l.Tool+" "+l.Verdict)
	}
	if !slices.Equal(have, want) || got.LedgerTotal != 3 {
		t.Errorf("ledger = %v (total %d), want %v", have, got.LedgerTotal, want)
	}
	if got.Ledger[1].Reason != "the job's policy: b is outside write_paths" || got.Ledger[0].Summary != "Read a" {
		t.Errorf("ledger entries = %+v", got.Ledger)
	}
	if got.Status != StatusError || !strings.Contains(got.Error, "past its policy's max_cost_usd of $0.0010") {
		t.Errorf("status %s error %q, want the cost cap", got.Status, got.Error)
	}
	var traced int
	for _, tr := range e.onDisk(s.ID).Trace {
		if tr.Kind == "verdict" {
			traced++
		}
	}
	if traced != 3 {
		t.Errorf("%d verdicts in the trace on disk, want 3", traced)
	}
	if p := LastLedger(make([]LedgerEntry, 80), PayloadLedger); len(p) != 50 {
		t.Errorf("payload ledger keeps %d", len(p))
	}
}

// A file tool call Claude Code's own deny rules refuse (a deny path hidden
// at the job's start) never reaches the approval child; the ledger still
// says the policy refused it, not that it ran.
func TestLedgerNamesAClaudeCodeDenyRuleRefusal(t *testing.T) {
	var p progress
	tu := harness.ToolUse{ID: "u1", Name: "Read", Detail: "secrets/key.txt"}
	for text, want := range map[string]string{
		"<tool_use_error>File is in a directory that is denied by your permission settings.</tool_use_error>": policy.DeniedByPolicy,
		"<tool_use_error>File does not exist.</tool_use_error>":                                               policy.AllowedByRule,
	} {
		e := p.ledgerEntry(tu, &harness.ToolResult{ToolUseID: "u1", IsError: true, Text: text}, time.Now())
		if e.Verdict != want || !strings.Contains(e.Reason, text) {
			t.Errorf("%s: verdict %s (%s), want %s", text, e.Verdict, e.Reason, want)
		}
	}
}

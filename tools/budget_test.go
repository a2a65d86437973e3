package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

func bigSnap() jobs.Snapshot {
	s := snap(jobs.StatusDone)
	s.Diff = strings.Repeat("+a line of the diff\n", 10_000) // 200 KB
	for range 60 {
		s.Ledger = append(s.Ledger, jobs.LedgerEntry{Tool: "Read", Verdict: "allowed_by_rule", Reason: strings.Repeat("r", 100)})
		s.Changes = append(s.Changes, changes.Change{Path: strings.Repeat("p", 50), Change: "modified"})
	}
	s.LedgerTotal = 60
	return s
}

// A payload over its host's budget leaves its large parts out, each named
// with the call that fetches it, and keeps the nonce and the result.
func TestPayloadFitsItsHostsBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      AgentToolOptions
		host   Host
		budget int
	}{
		{"an unknown host", AgentToolOptions{}, Host{}, DefaultResultBudget},
		{"Claude Code", AgentToolOptions{}, Host{Name: "claude-code"}, claudeCodeBudget},
		{"the owner's setting", AgentToolOptions{ResultBudget: 20_000}, Host{Name: "claude-code"}, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := WithHost(t.Context(), tc.host)
			res := agentResultFor(ctx, tc.o.withDefaults(), Payload(bigSnap(), bigSnap().CreatedAt))
			b, _ := json.Marshal(res.StructuredContent)
			p := payloadOf(t, res)
			total := len(b) + len(res.Content[0].(mcp.TextContent).Text)
			if total > tc.budget {
				t.Errorf("the result weighs %d bytes, over %d", total, tc.budget)
			}
			if p.Diff != "" || p.Nonce == "" || p.Result == "" {
				t.Errorf("diff %d bytes, nonce %q, result %q", len(p.Diff), p.Nonce, p.Result)
			}
			var parts []string
			for _, o := range p.Omitted {
				parts = append(parts, o.Part)
				if !strings.Contains(o.Fetch, `deepseek_agent_fetch {"job_id": "`+jobID+`", "part": "`+o.Part+`"}`) || o.Bytes <= 0 {
					t.Errorf("omitted %+v", o)
				}
			}
			if len(parts) == 0 || parts[0] != "ledger" || !strings.Contains(strings.Join(parts, ","), "diff") {
				t.Errorf("omitted parts %v: want the ledger's older entries, then the diff", parts)
			}
			if tc.host.claudeCode() != (res.Meta != nil && res.Meta.AdditionalFields["anthropic/maxResultSizeChars"] == claudeCodeMaxChars) {
				t.Errorf("_meta %+v for host %q", res.Meta, tc.host.Name)
			}
		})
	}
	// Within the budget, nothing is left out.
	small := snap(jobs.StatusDone)
	res := agentResultFor(t.Context(), AgentToolOptions{}.withDefaults(), Payload(small, small.CreatedAt))
	if p := payloadOf(t, res); len(p.Omitted) != 0 {
		t.Errorf("a small payload left out %+v", p.Omitted)
	}
}

// The pages of a part, joined, are the part byte for byte, and no page
// starts or ends inside a character.
func TestPagesJoinToThePart(t *testing.T) {
	part := []byte(strings.Repeat("diff ✓ ü 日本\n", 3000))
	var joined []byte
	offset, pages := 0, 0
	for {
		out, err := page(part, offset, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Text) > 1000 || out.Total != len(part) {
			t.Fatalf("page %d: %d bytes of %d", pages, len(out.Text), out.Total)
		}
		joined = append(joined, out.Text...)
		pages++
		if out.NextOffset == 0 {
			break
		}
		offset = out.NextOffset
	}
	if string(joined) != string(part) || pages < len(part)/1000 {
		t.Fatalf("%d pages joined to %d bytes, want %d", pages, len(joined), len(part))
	}
	if _, err := page(part, strings.Index(string(part), "✓")+1, 10); err == nil || !strings.Contains(err.Error(), "inside a character") {
		t.Errorf("an offset inside a character: %v", err)
	}
	if _, err := page(part, len(part)+1, 10); err == nil {
		t.Error("an offset past the end was taken")
	}
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// What a result may weigh. Hosts cut what they receive: Claude Code saves a
// result over 50,000 characters to a file and shows its model a pointer
// (unless the result's _meta raises that with anthropic/maxResultSizeChars),
// Codex clips one at about 10 KiB. A payload over its host's budget leaves
// its large parts out, each named in omitted with the call that fetches it
// (deepseek_agent_fetch). Claude Code shows its model structuredContent, not
// the text; which half the other hosts show is not checked here, so the
// text carries the summary, the nonce, the result and the pointers, and
// structuredContent every part (the diff is never in the text).
const (
	// DefaultResultBudget fits Codex's clip, and any host not known.
	DefaultResultBudget = 9 << 10
	// claudeCodeBudget is under Claude Code's 50,000 characters.
	claudeCodeBudget = 40_000
	// claudeCodeMaxChars is the anthropic/maxResultSizeChars a result to
	// Claude Code carries, so that one near the budget is never moved.
	claudeCodeMaxChars = 100_000
)

// Host is what a call knows of its host: the name in its clientInfo (from
// the request's own _meta since protocol 2026-07-28; "" when unknown).
type Host struct{ Name string }

type hostKey struct{}

// WithHost marks ctx's call as made by h (the server sets it per call).
func WithHost(ctx context.Context, h Host) context.Context {
	return context.WithValue(ctx, hostKey{}, h)
}

func hostOf(ctx context.Context) Host { h, _ := ctx.Value(hostKey{}).(Host); return h }

func (h Host) claudeCode() bool { return h.Name == "claude-code" }

// budget is the bytes a result to h may weigh: the owner's setting, else
// the host's.
func (o AgentToolOptions) budget(h Host) int {
	switch {
	case o.ResultBudget > 0:
		return o.ResultBudget
	case h.claudeCode():
		return claudeCodeBudget
	}
	return DefaultResultBudget
}

// Omitted is one part a payload left out to fit its host.
type Omitted struct {
	Part  string `json:"part" jsonschema:"diff, result, changes, ledger or commands"`
	Bytes int    `json:"bytes" jsonschema:"how much of it was left out, in bytes of the payload"`
	Fetch string `json:"fetch" jsonschema:"the call that returns all of it, a page at a time"`
}

// weight is what a payload's result weighs: its structuredContent and text.
func weight(p AgentJobPayload) int {
	b, _ := json.Marshal(p)
	return len(b) + len(AgentText(p))
}

// fit leaves large parts of p out, the least needed first, until its result
// is within budget: the ledger but its last few entries, the diff, then the
// changes, the commands and the ledger (a few kept, then none), then the
// result itself, cut.
func fit(p *AgentJobPayload, budget int) {
	over := func() bool { return weight(*p) > budget }
	if !over() {
		return
	}
	omit := func(part string, bytes int) {
		for i := range p.Omitted {
			if p.Omitted[i].Part == part {
				p.Omitted[i].Bytes += bytes
				return
			}
		}
		p.Omitted = append(p.Omitted, Omitted{Part: part, Bytes: bytes,
			Fetch: fmt.Sprintf(`deepseek_agent_fetch {"job_id": %q, "part": %q}`, p.JobID, part)})
	}
	size := func(v any) int { b, _ := json.Marshal(v); return len(b) }
	if n := len(p.Ledger); n > 5 { // the ledger's last few say what was refused lately
		omit("ledger", size(p.Ledger[:n-5]))
		p.Ledger = p.Ledger[n-5:]
	}
	if over() && p.Diff != "" {
		omit("diff", len(p.Diff))
		p.Diff = ""
	}
	for _, keep := range []int{5, 0} {
		if !over() {
			return
		}
		if n := len(p.Ledger); n > keep {
			omit("ledger", size(p.Ledger[:n-keep]))
			p.Ledger = p.Ledger[n-keep:]
		}
		if n := len(p.Changes); n > keep {
			omit("changes", size(p.Changes[keep:]))
			p.Changes = p.Changes[:keep]
		}
		if n := len(p.Commands); n > keep {
			omit("commands", size(p.Commands[:n-keep]))
			p.Commands = p.Commands[n-keep:]
		}
	}
	if over() && p.Result != "" {
		// The result, cut: twice, as it is in both halves.
		room := max(0, (budget-(weight(*p)-2*len(p.Result)))/2-200)
		if room < len(p.Result) {
			cut := harness.Clip(p.Result, room)
			omit("result", len(p.Result)-len(strings.TrimSuffix(cut, "…")))
			p.Result = cut
		}
	}
}

// agentResultFor is the result of an agent tool for its call's host: within
// the host's budget, and, for Claude Code, never moved to a file.
func agentResultFor(ctx context.Context, o AgentToolOptions, p AgentJobPayload) *mcp.CallToolResult {
	h := hostOf(ctx)
	fit(&p, o.budget(h))
	res := mcp.NewToolResultStructured(p, AgentText(p))
	if h.claudeCode() {
		res.Meta = mcp.NewMetaFromMap(map[string]any{"anthropic/maxResultSizeChars": claudeCodeMaxChars})
	}
	return res
}

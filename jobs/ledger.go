package jobs

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Bounds of a job's ledger.
const (
	MaxLedger     = 2000 // entries kept in the snapshot (the oldest are dropped; LedgerTotal counts all)
	PayloadLedger = 50   // entries an agent tool's payload carries
	maxLedgerLine = 64 << 10
	// maxPendingVerdicts bounds a job's verdicts waiting for their tool
	// result (Registry.apply).
	maxPendingVerdicts = 4096
)

// LedgerEntry is one tool call of a job and what became of it.
type LedgerEntry struct {
	Time    time.Time `json:"time"`
	Tool    string    `json:"tool"`
	Summary string    `json:"summary,omitempty"`
	// Verdict is one of policy.AllowedByRule, AllowedByHuman, DeniedByPolicy,
	// DeniedByHuman, TimedOut, NotOffered.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// LastLedger returns the last n entries of l (never nil).
func LastLedger(l []LedgerEntry, n int) []LedgerEntry {
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return append([]LedgerEntry{}, l...)
}

// denyRuleText is in Claude Code's (2.1.328) answer to a file tool call a
// permissions.deny rule of the job's settings refuses before any prompt (a
// deny path, a workspace secret file): "File is in a directory that is
// denied by your permission settings."
const denyRuleText = "denied by your permission settings"

// addVerdict keeps v until its call's tool result. The first verdict on a
// call is the one it ran under: a later line for the same id (a command of
// the job that read the token and asked again) does not rewrite it. At most
// maxPendingVerdicts wait, the oldest dropped first, so verdicts under ids
// no call has (made up by such a command) cannot crowd out the real ones,
// which their results take soon after they are written.
func (p *progress) addVerdict(v policy.Verdict) {
	if _, seen := p.verdicts[v.ToolUseID]; seen {
		return
	}
	for len(p.verdicts) >= maxPendingVerdicts && len(p.verdictQ) > 0 {
		delete(p.verdicts, p.verdictQ[0])
		p.verdictQ = p.verdictQ[1:]
	}
	if len(p.verdictQ) > 2*maxPendingVerdicts { // ids whose results took them
		live := p.verdictQ[:0:0]
		for _, id := range p.verdictQ {
			if _, ok := p.verdicts[id]; ok {
				live = append(live, id)
			}
		}
		p.verdictQ = live
	}
	p.verdicts[v.ToolUseID] = v
	p.verdictQ = append(p.verdictQ, v.ToolUseID)
}

// ledgerEntry is the verdict on one finished tool call: the approval child's
// record of it when there is one, else what the harness showed.
func (p *progress) ledgerEntry(tu harness.ToolUse, tr *harness.ToolResult, at time.Time) LedgerEntry {
	e := LedgerEntry{Time: at, Tool: tu.Name, Summary: tu.Name}
	if tu.Detail != "" {
		e.Summary += ": " + tu.Detail
	}
	if v, ok := p.verdicts[tr.ToolUseID]; ok {
		delete(p.verdicts, tr.ToolUseID)
		e.Verdict, e.Reason = v.Verdict, v.Reason
		if v.Summary != "" {
			e.Summary = v.Summary
		}
		return e
	}
	switch {
	case p.offered != nil && !slices.Contains(p.offered, tu.Name):
		e.Verdict, e.Reason = policy.NotOffered, "the job's policy does not offer "+tu.Name+": Claude Code was not given it"
	case tr.Denied, tr.IsError && strings.Contains(tr.Text, denyRuleText):
		e.Verdict, e.Reason = policy.DeniedByPolicy, "refused by the job's permission settings: "+harness.Clip(tr.Text, 200)
	case tr.IsError:
		e.Verdict, e.Reason = policy.AllowedByRule, "not asked: the harness answered it with an error before any permission check: "+harness.Clip(tr.Text, 200)
	default:
		e.Verdict, e.Reason = policy.AllowedByRule, "run by the harness without asking (its own bookkeeping)"
	}
	return e
}

// addLedger appends e to the snapshot's ledger and trace.
func (p *progress) addLedger(e LedgerEntry) {
	s := &p.snap
	s.LedgerTotal++
	s.Ledger = append(s.Ledger, e)
	if over := len(s.Ledger) - MaxLedger; over > 0 {
		s.Ledger = append(s.Ledger[:0:0], s.Ledger[over:]...)
	}
	s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: e.Time, Kind: "verdict", Tool: e.Tool, Detail: e.Verdict + ": " + harness.Clip(e.Reason, 300)})
}

// ledgerReader reads the approval child's verdicts as it appends them. Only
// the goroutine that runs the job uses it.
type ledgerReader struct {
	path string
	off  int64
	part []byte // a line not yet complete (at most maxLedgerLine)
	skip bool   // part was cut: the rest of its line is not a verdict
}

// next returns the verdicts appended since the last call.
func (l *ledgerReader) next() []policy.Verdict {
	if l == nil || l.path == "" {
		return nil
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return nil
	}
	// Everything appended since, line by line (memory: one line), the
	// line begun at the last read first.
	cr := &countingReader{r: f}
	var out []policy.Verdict
	tail, whole, _ := statedir.EachLine(io.MultiReader(bytes.NewReader(l.part), cr), maxLedgerLine, func(line []byte, whole bool) {
		var v policy.Verdict
		if whole && !l.skip && json.Unmarshal(line, &v) == nil && v.ToolUseID != "" {
			out = append(out, v)
		}
		l.skip = false
	})
	l.off += cr.n
	l.part = append(l.part[:0], tail...)
	if !whole {
		l.part, l.skip = l.part[:0], true
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

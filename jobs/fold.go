package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// Bounds of what a job's snapshot keeps of its harness events.
const (
	MaxTrace    = 500 // trace entries kept (the oldest are dropped)
	MaxCommands = 200
	MaxFiles    = 200
	maxNotes    = 5
)

// progress is a job's snapshot with what folding its harness events needs
// besides: the calls still waiting for a result, usage per model message,
// and what a Partial reports if the job does not finish.
type progress struct {
	snap     Snapshot
	price    deepseek.Price             // what the job's tokens cost
	result   *harness.Result            // the harness's result line, once it came
	tools    map[string]harness.ToolUse // tool_use id → call, for matching results
	cmdAt    map[string]cmdRef          // Bash tool_use id → its command in snap.Commands
	msgUsage map[string]harness.Usage   // per model message, until the result line
	notes    []string                   // the model's last maxNotes texts
	tally    map[string]int             // tool calls per tool name
	touched  []string                   // files read, or written by a Write/Edit that succeeded
	offered  []string                   // the tools the job was offered (nil: not known)
	verdicts map[string]policy.Verdict  // tool_use id → the approval child's verdict, until its result
	verdictQ []string                   // the ids of verdicts, oldest first (addVerdict)
	// timedOut: the last denied tool call was an approval request no human
	// answered in time.
	timedOut bool
}

// cmdRef is a running command: where it is listed and when it started.
type cmdRef struct {
	i     int
	start time.Time
}

// price is the price of model by Options.Price, else deepseek.PriceFor.
func (r *Registry) price(model string) deepseek.Price {
	if r.opts.Price != nil {
		return r.opts.Price(model)
	}
	return deepseek.PriceFor(model)
}

func newProgress(snap Snapshot, price deepseek.Price) progress {
	return progress{
		snap:     snap,
		price:    price,
		tools:    map[string]harness.ToolUse{},
		cmdAt:    map[string]cmdRef{},
		msgUsage: map[string]harness.Usage{},
		tally:    map[string]int{},
		verdicts: map[string]policy.Verdict{},
	}
}

// fold returns p with one harness event folded in, and, when that event took
// the job past its step ceiling, the reason to stop it. Like append it may
// reuse p's storage, so the caller keeps only what it returns. It takes no
// lock, does no I/O and reads no clock: trace entries carry ev.Time.
func fold(p progress, ev harness.Event) (_ progress, stop string) {
	s := &p.snap
	switch ev.Kind {
	case harness.KindInit:
		s.SessionID = ev.SessionID
	case harness.KindUsage:
		p.msgUsage[ev.MessageID] = *ev.Usage
	case harness.KindText:
		p.notes = append(p.notes, ev.Text)
		if len(p.notes) > maxNotes {
			p.notes = p.notes[len(p.notes)-maxNotes:]
		}
		s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: ev.Time, Kind: "text", Detail: harness.Clip(ev.Text, 300)})
	case harness.KindToolUse:
		stop = p.toolUse(ev)
	case harness.KindToolResult:
		p.toolResult(ev)
	case harness.KindResult:
		p.result = ev.Result
		s.NumTurns = ev.Result.NumTurns
		if ev.Result.SessionID != "" {
			s.SessionID = ev.Result.SessionID
		}
		// Every turn's result is kept in the trace: an interrupted turn's
		// (a steer, a stop) as well as the last one.
		detail := ev.Result.Subtype
		if ev.Result.Text != "" {
			detail += ": " + harness.Clip(ev.Result.Text, 300)
		}
		s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: ev.Time, Kind: "result", Detail: detail, IsError: ev.Result.IsError})
		s.PermissionDenials = s.PermissionDenials[:0]
		for _, d := range ev.Result.PermissionDenials {
			s.PermissionDenials = append(s.PermissionDenials, Denial{ToolName: d.ToolName, ToolUseID: d.ToolUseID})
		}
	}
	p.setUsage(nil)
	if c := s.Policy; stop == "" && c != nil && c.MaxCostUSD > 0 && s.CostUSD > c.MaxCostUSD {
		stop = fmt.Sprintf("the job's model calls cost $%.4f, past its policy's max_cost_usd of $%.4f, and it was stopped", s.CostUSD, c.MaxCostUSD)
	}
	return p, stop
}

func (p *progress) toolUse(ev harness.Event) (stop string) {
	s := &p.snap
	tu := *ev.ToolUse
	s.Steps++
	s.LastTool = tu.Name
	if tu.Detail != "" {
		s.LastTool += ": " + tu.Detail
	}
	p.tools[tu.ID] = tu
	p.tally[tu.Name]++
	// A command is listed as soon as it starts, so a job stopped while it
	// runs still reports it (settleCommands notes why it has no result).
	if tu.Name == "Bash" && len(s.Commands) < MaxCommands {
		p.cmdAt[tu.ID] = cmdRef{i: len(s.Commands), start: ev.Time}
		c := Command{Command: tu.Command}
		if s.Status == StatusWaitingApproval {
			// Its call came after the approval request it waits on.
			c.Note = NoteWaiting
		}
		s.Commands = append(s.Commands, c)
		countRuns(s.Commands, tu.Command)
	}
	s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: ev.Time, Kind: "tool_use", Tool: tu.Name, Detail: tu.Detail})
	if s.Steps <= s.MaxSteps {
		return ""
	}
	calls := "tool calls"
	if s.MaxSteps == 1 {
		calls = "tool call"
	}
	return fmt.Sprintf("the job hit its step ceiling of %d %s and was stopped", s.MaxSteps, calls)
}

func (p *progress) toolResult(ev harness.Event) {
	s := &p.snap
	tr := ev.ToolResult
	tu, known := p.tools[tr.ToolUseID]
	delete(p.tools, tr.ToolUseID)
	entry := TraceEntry{Time: ev.Time, Kind: "tool_result", Tool: tu.Name, Detail: harness.Clip(tr.Text, 200), IsError: tr.IsError, Denied: tr.Denied}
	if known && tu.Name == "Bash" {
		entry.ExitCode = tr.ExitCode
		ran := Command{Command: tu.Command, ExitCode: tr.ExitCode, Denied: tr.Denied}
		switch {
		case tr.Background != "":
			ran.Note = noteBackground + tr.Background + ")"
		case tr.ExitCode == nil && !tr.Denied && tr.IsError:
			ran.Note = notePrefixFailed + firstLine(tr.Text, 160)
		}
		if ref, ok := p.cmdAt[tr.ToolUseID]; ok {
			delete(p.cmdAt, tr.ToolUseID)
			c := &s.Commands[ref.i]
			c.ExitCode, c.Denied, c.Note = ran.ExitCode, ran.Denied, ran.Note
			countRuns(s.Commands, tu.Command) // it may have waited for approval, uncounted
			if !tr.Denied {
				ms := commandDuration(ref.start, p.verdicts[tr.ToolUseID].Decided, ev.Time).Milliseconds()
				c.DurationMS = &ms
				c.OutputTail = tr.Tail
			}
		}
		if !tr.Denied { // also past MaxCommands: a later command may change the workspace
			ranCommand(s.Acceptance, tu.Command, ran)
		}
	}
	if known && tr.Denied {
		p.timedOut = approvalTimedOut(tr.Text)
	}
	// A refused or failed Write/Edit changed nothing: a file counts as
	// written, or touched, only once its tool succeeded.
	if ok := known && !tr.IsError && !tr.Denied; ok && tu.Path != "" {
		changed(s.Acceptance, tu.Name+" wrote "+tu.Path+" after it")
		s.FilesWritten = addFile(s.FilesWritten, tu.Path)
		p.touched = addFile(p.touched, tu.Path)
	} else if ok && tu.Name == "Read" && tu.Detail != "" {
		p.touched = addFile(p.touched, tu.Detail)
	}
	s.Trace = appendTrace(s.Trace, &s.TraceDropped, entry)
	if known {
		p.addLedger(p.ledgerEntry(tu, tr, ev.Time))
	}
}

// commandDuration is how long a command ran: from when it was allowed to its
// result. A command a person approved was allowed at the decision (the
// ledger's verdict says when), not at its call, so the wait for the person
// is left out; a decision time outside the call and its result (a clock
// step, a verdict of an older build) is not used.
func commandDuration(called, decided, result time.Time) time.Duration {
	start := called
	if decided.After(called) && !decided.After(result) {
		start = decided
	}
	return max(result.Sub(start), 0)
}

// setUsage recomputes the job's usage: the gateway's count (and cost) if it
// has one, else the harness's result line, else the sum of its messages so
// far, priced at the job's model.
func (p *progress) setUsage(gw *Metered) {
	if gw != nil && !gw.Usage.IsZero() {
		p.snap.Usage, p.snap.CostUSD = gw.Usage, deepseek.RoundUSD(gw.CostUSD)
		return
	}
	var u Usage
	switch {
	case p.result != nil:
		u = fromHarness(p.result.Usage)
	default:
		var sum harness.Usage
		for _, mu := range p.msgUsage {
			sum = sum.Add(mu)
		}
		u = fromHarness(sum)
	}
	p.snap.Usage = u
	p.snap.CostUSD = p.price.Cost(u.CacheReadTokens, u.InputTokens, u.OutputTokens)
}

func fromHarness(h harness.Usage) Usage {
	return Usage{
		InputTokens:     h.InputTokens + h.CacheCreationTokens,
		OutputTokens:    h.OutputTokens,
		CacheReadTokens: h.CacheReadTokens,
		ThinkingTokens:  h.ThinkingTokens,
	}
}

// partial is what the job had done, for a job that did not finish.
func (p *progress) partial() *Partial {
	return &Partial{
		Label:        PartialLabel,
		Notes:        append([]string(nil), p.notes...),
		ToolCalls:    maps.Clone(p.tally),
		FilesTouched: append([]string(nil), p.touched...),
	}
}

// partialFromSnapshot rebuilds the partial of a job from its trace alone (a
// job found running on disk after a restart).
func partialFromSnapshot(s *Snapshot) *Partial {
	p := &Partial{Label: PartialLabel, ToolCalls: map[string]int{}}
	for _, e := range s.Trace {
		switch e.Kind {
		case "tool_use":
			p.ToolCalls[e.Tool]++
		case "text":
			p.Notes = append(p.Notes, e.Detail)
		}
	}
	if len(p.Notes) > maxNotes {
		p.Notes = p.Notes[len(p.Notes)-maxNotes:]
	}
	p.FilesTouched = append(p.FilesTouched, s.FilesWritten...)
	return p
}

// addFile appends path unless it is listed already or the list is full.
func addFile(list []string, path string) []string {
	if slices.Contains(list, path) || len(list) >= MaxFiles {
		return list
	}
	return append(list, path)
}

// appendTrace appends e, dropping (and counting) the oldest entries past MaxTrace.
func appendTrace(tr []TraceEntry, dropped *int, e TraceEntry) []TraceEntry {
	tr = append(tr, e)
	if over := len(tr) - MaxTrace; over > 0 {
		*dropped += over
		tr = append(tr[:0:0], tr[over:]...)
	}
	return tr
}

// firstLine is the first non-empty line of s, clipped to n bytes.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return harness.Clip(l, n)
		}
	}
	return "(no output)"
}

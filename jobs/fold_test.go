package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

var foldStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// foldAll folds evs into a fresh job with the given step ceiling; event i
// happens i seconds after foldStart. It returns the state and every stop
// reason fold gave, by event index.
func foldAll(maxSteps int, evs ...harness.Event) (progress, map[int]string) {
	p := newProgress(Snapshot{ID: strings.Repeat("a", 32), Status: StatusRunning, MaxSteps: maxSteps, FilesWritten: []string{}, Commands: []Command{}}, deepseek.FlashPrice)
	stops := map[int]string{}
	for i, ev := range evs {
		ev.Time = foldStart.Add(time.Duration(i) * time.Second)
		var stop string
		p, stop = fold(p, ev)
		if stop != "" {
			stops[i] = stop
		}
	}
	return p, stops
}

func evUsage(msg string, in, cacheCreate, cacheRead, out int64) harness.Event {
	return harness.Event{Kind: harness.KindUsage, MessageID: msg, Usage: &harness.Usage{InputTokens: in, CacheCreationTokens: cacheCreate, CacheReadTokens: cacheRead, OutputTokens: out}}
}

func evResultText(id string, isErr, denied bool, code *int, text string) harness.Event {
	return harness.Event{Kind: harness.KindToolResult, ToolResult: &harness.ToolResult{ToolUseID: id, IsError: isErr, Denied: denied, ExitCode: code, Text: text}}
}

func TestFold(t *testing.T) {
	long := strings.Repeat("x", 400)
	tests := []struct {
		name     string
		maxSteps int
		events   []harness.Event
		check    func(t *testing.T, p progress, stops map[int]string)
	}{
		{"assistant text: the last notes, a clipped trace at the event's time", 10,
			[]harness.Event{evText("n1"), evText("n2"), evText("n3"), evText("n4"), evText("n5"), evText("n6"), evText(long)},
			func(t *testing.T, p progress, _ map[int]string) {
				if want := []string{"n3", "n4", "n5", "n6", long}; !slices.Equal(p.notes, want) {
					t.Errorf("notes = %q, want %q", p.notes, want)
				}
				if len(p.snap.Trace) != 7 {
					t.Fatalf("trace = %+v", p.snap.Trace)
				}
				last := p.snap.Trace[6]
				if last.Kind != "text" || last.Detail != strings.Repeat("x", 300)+"…" || !last.Time.Equal(foldStart.Add(6*time.Second)) {
					t.Errorf("last trace entry = %+v", last)
				}
				if p.snap.Steps != 0 || len(p.tally) != 0 {
					t.Errorf("text counted as a step: %d %v", p.snap.Steps, p.tally)
				}
			}},
		{"init and result set the session", 10,
			[]harness.Event{{Kind: harness.KindInit, SessionID: "s1"}},
			func(t *testing.T, p progress, _ map[int]string) {
				if p.snap.SessionID != "s1" {
					t.Errorf("session %q", p.snap.SessionID)
				}
				p, _ = fold(p, harness.Event{Kind: harness.KindResult, Result: &harness.Result{}})
				if p.snap.SessionID != "s1" {
					t.Errorf("a result without a session cleared it: %q", p.snap.SessionID)
				}
				p, _ = fold(p, harness.Event{Kind: harness.KindResult, Result: &harness.Result{SessionID: "s2"}})
				if p.snap.SessionID != "s2" {
					t.Errorf("session %q, want the result's", p.snap.SessionID)
				}
			}},
		{"Bash tool_use: a step, listed as a running command at once", 10,
			[]harness.Event{evToolUse("b1", "Bash", "make test")},
			func(t *testing.T, p progress, _ map[int]string) {
				s := p.snap
				if s.Steps != 1 || s.LastTool != "Bash: make test" || p.tally["Bash"] != 1 {
					t.Errorf("steps %d last %q tally %v", s.Steps, s.LastTool, p.tally)
				}
				if len(s.Commands) != 1 || s.Commands[0].Command != "make test" || s.Commands[0].Status() != "running" {
					t.Errorf("commands = %+v", s.Commands)
				}
				if e := s.Trace[0]; e.Kind != "tool_use" || e.Tool != "Bash" || e.Detail != "make test" {
					t.Errorf("trace = %+v", e)
				}
				if _, ok := p.tools["b1"]; !ok || p.cmdAt["b1"].i != 0 {
					t.Errorf("call not kept for its result: tools %v cmdAt %v", p.tools, p.cmdAt)
				}
			}},
		{"Bash tool_result: its exit code, matched by id", 10,
			[]harness.Event{evToolUse("b1", "Bash", "ls"), evToolUse("b2", "Bash", "false"), evToolResult("b2", true, intp(1)), evToolResult("b1", false, intp(0))},
			func(t *testing.T, p progress, _ map[int]string) {
				c := p.snap.Commands
				if len(c) != 2 || c[0].Status() != "exit 0" || c[1].Status() != "exit 1" {
					t.Errorf("commands = %+v", c)
				}
				e := p.snap.Trace[2]
				if e.Kind != "tool_result" || e.Tool != "Bash" || e.ExitCode == nil || *e.ExitCode != 1 || !e.IsError || e.Detail != "out" {
					t.Errorf("trace = %+v", e)
				}
				if len(p.tools) != 0 || len(p.cmdAt) != 0 {
					t.Errorf("matched calls kept: %v %v", p.tools, p.cmdAt)
				}
			}},
		{"Bash refused by the harness: the first line of its error", 10,
			[]harness.Event{evToolUse("b1", "Bash", "sleep 1; ls"), evResultText("b1", true, false, nil, "\n  Blocked: "+long+"\nmore")},
			func(t *testing.T, p progress, _ map[int]string) {
				want := notePrefixFailed + harness.Clip("Blocked: "+long, 160)
				if c := p.snap.Commands[0]; c.Note != want || c.ExitCode != nil || c.Denied {
					t.Errorf("command = %+v, want note %q", c, want)
				}
				if d := p.snap.Trace[1].Detail; d != harness.Clip("\n  Blocked: "+long+"\nmore", 200) {
					t.Errorf("trace detail %q", d)
				}
			}},
		{"Bash denied: denied, no note", 10,
			[]harness.Event{evToolUse("b1", "Bash", "rm -rf /"), evResultText("b1", true, true, nil, "denied")},
			func(t *testing.T, p progress, _ map[int]string) {
				if c := p.snap.Commands[0]; c.Status() != "denied" || c.Note != "" {
					t.Errorf("command = %+v", c)
				}
				if e := p.snap.Trace[1]; !e.Denied || !e.IsError {
					t.Errorf("trace = %+v", e)
				}
			}},
		{"Write and Edit: a file counts once its tool succeeded", 10,
			[]harness.Event{
				evToolUse("w1", "Write", "/ws/ok"), evToolResult("w1", false, nil),
				evToolUse("e1", "Edit", "/ws/failed"), evToolResult("e1", true, nil),
				evToolUse("w2", "Write", "/ws/denied"), evResultText("w2", true, true, nil, "no"),
				evToolUse("w3", "Write", "/ws/inflight"),
				evToolUse("e2", "Edit", "/ws/ok"), evToolResult("e2", false, nil),
			},
			func(t *testing.T, p progress, _ map[int]string) {
				if !slices.Equal(p.snap.FilesWritten, []string{"/ws/ok"}) || !slices.Equal(p.touched, []string{"/ws/ok"}) {
					t.Errorf("files written %v touched %v, want only /ws/ok (once)", p.snap.FilesWritten, p.touched)
				}
				if len(p.snap.Commands) != 0 || p.tally["Write"] != 3 || p.tally["Edit"] != 2 || p.snap.Steps != 5 {
					t.Errorf("commands %v tally %v steps %d", p.snap.Commands, p.tally, p.snap.Steps)
				}
				if e := p.snap.Trace[1]; e.ExitCode != nil || e.Tool != "Write" {
					t.Errorf("trace = %+v", e)
				}
			}},
		{"Read: touched, not written", 10,
			[]harness.Event{evToolUse("r1", "Read", "/ws/f"), evToolResult("r1", false, nil), evToolUse("r2", "Read", "/ws/g"), evToolResult("r2", true, nil)},
			func(t *testing.T, p progress, _ map[int]string) {
				if len(p.snap.FilesWritten) != 0 || !slices.Equal(p.touched, []string{"/ws/f"}) {
					t.Errorf("files written %v touched %v", p.snap.FilesWritten, p.touched)
				}
			}},
		{"other tools: a step and a tally, no command, no file", 10,
			[]harness.Event{evToolUse("g1", "Grep", "TODO"), evToolResult("g1", false, nil), evToolUse("t1", "TodoWrite", "")},
			func(t *testing.T, p progress, _ map[int]string) {
				s := p.snap
				if s.Steps != 2 || s.LastTool != "TodoWrite" || p.tally["Grep"] != 1 || p.tally["TodoWrite"] != 1 {
					t.Errorf("steps %d last %q tally %v", s.Steps, s.LastTool, p.tally)
				}
				if len(s.Commands) != 0 || len(s.FilesWritten) != 0 || len(p.touched) != 0 {
					t.Errorf("commands %v files %v touched %v", s.Commands, s.FilesWritten, p.touched)
				}
			}},
		{"a result for an unknown call: traced without a tool or exit code", 10,
			[]harness.Event{evToolUse("b1", "Bash", "ls"), evToolResult("zz", false, intp(3))},
			func(t *testing.T, p progress, _ map[int]string) {
				if e := p.snap.Trace[1]; e.Tool != "" || e.ExitCode != nil {
					t.Errorf("trace = %+v", e)
				}
				if p.snap.Commands[0].Status() != "running" {
					t.Errorf("command = %+v", p.snap.Commands[0])
				}
			}},
		{"usage per message: the latest count of each, summed and priced", 10,
			[]harness.Event{evUsage("m1", 10, 5, 100, 1), evUsage("m2", 20, 0, 200, 2), evUsage("m1", 30, 5, 300, 3), evText("after")},
			func(t *testing.T, p progress, _ map[int]string) {
				want := Usage{InputTokens: 55, CacheReadTokens: 500, OutputTokens: 5}
				if p.snap.Usage != want {
					t.Errorf("usage = %+v, want %+v", p.snap.Usage, want)
				}
				if c := deepseek.FlashPrice.Cost(500, 55, 5); p.snap.CostUSD != c {
					t.Errorf("cost = %v, want %v", p.snap.CostUSD, c)
				}
			}},
		{"the result line: its usage wins, its turns and denials", 10,
			[]harness.Event{
				evUsage("m1", 10, 0, 0, 1),
				{Kind: harness.KindResult, Result: &harness.Result{NumTurns: 4, PermissionDenials: []harness.Denial{{ToolName: "Bash", ToolUseID: "b1"}, {ToolName: "Write", ToolUseID: "w1"}},
					Usage: harness.Usage{InputTokens: 1000, CacheCreationTokens: 7, CacheReadTokens: 4000, OutputTokens: 500, ThinkingTokens: 100}}},
			},
			func(t *testing.T, p progress, _ map[int]string) {
				s := p.snap
				if want := (Usage{InputTokens: 1007, CacheReadTokens: 4000, OutputTokens: 500, ThinkingTokens: 100}); s.Usage != want {
					t.Errorf("usage = %+v, want %+v", s.Usage, want)
				}
				if c := deepseek.FlashPrice.Cost(4000, 1007, 500); s.CostUSD != c {
					t.Errorf("cost = %v, want %v", s.CostUSD, c)
				}
				if s.NumTurns != 4 || !slices.Equal(s.PermissionDenials, []Denial{{"Bash", "b1"}, {"Write", "w1"}}) || p.result == nil {
					t.Errorf("turns %d denials %v result %v", s.NumTurns, s.PermissionDenials, p.result)
				}
				p, _ = fold(p, harness.Event{Kind: harness.KindResult, Result: &harness.Result{PermissionDenials: []harness.Denial{{ToolName: "Edit", ToolUseID: "e1"}}}})
				if !slices.Equal(p.snap.PermissionDenials, []Denial{{"Edit", "e1"}}) {
					t.Errorf("a later result line does not replace the denials: %v", p.snap.PermissionDenials)
				}
			}},
		{"the step ceiling: every call past it says stop", 2,
			[]harness.Event{evToolUse("a", "Read", "f"), evText("hm"), evToolUse("b", "Read", "g"), evToolUse("c", "Bash", "ls"), evToolResult("c", false, intp(0)), evToolUse("d", "Read", "h")},
			func(t *testing.T, p progress, stops map[int]string) {
				want := "the job hit its step ceiling of 2 tool calls and was stopped"
				if len(stops) != 2 || stops[3] != want || stops[5] != want {
					t.Errorf("stops = %v, want %q at events 3 and 5", stops, want)
				}
			}},
		{"the step ceiling of one call", 1,
			[]harness.Event{evToolUse("a", "Read", "f"), evToolUse("b", "Read", "g")},
			func(t *testing.T, p progress, stops map[int]string) {
				if want := "the job hit its step ceiling of 1 tool call and was stopped"; len(stops) != 1 || stops[1] != want {
					t.Errorf("stops = %v, want %q", stops, want)
				}
			}},
		{"MaxTrace: the oldest entries dropped and counted", 10,
			texts(MaxTrace + 10),
			func(t *testing.T, p progress, _ map[int]string) {
				if len(p.snap.Trace) != MaxTrace || p.snap.TraceDropped != 10 || p.snap.Trace[0].Detail != "t10" {
					t.Errorf("trace %d entries (first %q), dropped %d", len(p.snap.Trace), p.snap.Trace[0].Detail, p.snap.TraceDropped)
				}
			}},
		{"MaxCommands: later commands are steps, not listed", MaxCommands + 10,
			bashCalls(MaxCommands + 5),
			func(t *testing.T, p progress, _ map[int]string) {
				if len(p.snap.Commands) != MaxCommands || p.snap.Steps != MaxCommands+5 || p.tally["Bash"] != MaxCommands+5 {
					t.Fatalf("commands %d steps %d tally %v", len(p.snap.Commands), p.snap.Steps, p.tally)
				}
				if last := p.snap.Commands[MaxCommands-1]; last.Command != fmt.Sprint("echo ", MaxCommands-1) || last.Status() != "exit 0" {
					t.Errorf("last listed = %+v", last)
				}
				if e := p.snap.Trace[len(p.snap.Trace)-2]; e.ExitCode == nil || *e.ExitCode != 0 {
					t.Errorf("an unlisted command's result lost its exit code in the trace: %+v", e)
				}
			}},
		{"MaxFiles: the list stops growing", 2*MaxFiles + 20,
			writes(MaxFiles + 5),
			func(t *testing.T, p progress, _ map[int]string) {
				if len(p.snap.FilesWritten) != MaxFiles || len(p.touched) != MaxFiles || p.snap.FilesWritten[MaxFiles-1] != fmt.Sprint("/ws/", MaxFiles-1) {
					t.Errorf("files written %d touched %d", len(p.snap.FilesWritten), len(p.touched))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, stops := foldAll(tt.maxSteps, tt.events...)
			tt.check(t, p, stops)
		})
	}
}

func texts(n int) []harness.Event {
	var evs []harness.Event
	for i := range n {
		evs = append(evs, evText(fmt.Sprint("t", i)))
	}
	return evs
}

func bashCalls(n int) []harness.Event {
	var evs []harness.Event
	for i := range n {
		id := fmt.Sprint("b", i)
		evs = append(evs, evToolUse(id, "Bash", fmt.Sprint("echo ", i)), evToolResult(id, false, intp(0)))
	}
	return evs
}

func writes(n int) []harness.Event {
	var evs []harness.Event
	for i := range n {
		id := fmt.Sprint("w", i)
		evs = append(evs, evToolUse(id, "Write", fmt.Sprint("/ws/", i)), evToolResult(id, false, nil))
	}
	return evs
}

// The partial of a job that did not finish copies what fold kept, so a later
// event cannot change a partial already handed out.
func TestPartialCopiesProgress(t *testing.T) {
	p, _ := foldAll(10, evText("note"), evToolUse("r", "Read", "/ws/f"), evToolResult("r", false, nil))
	part := p.partial()
	if part.Label != PartialLabel || !slices.Equal(part.Notes, []string{"note"}) || part.ToolCalls["Read"] != 1 || !slices.Equal(part.FilesTouched, []string{"/ws/f"}) {
		t.Fatalf("partial = %+v", part)
	}
	p, _ = fold(p, evToolUse("r2", "Read", "/ws/g"))
	if part.ToolCalls["Read"] != 1 {
		t.Errorf("partial changed with a later event: %v", part.ToolCalls)
	}
}

// A command's duration runs from when it was allowed: a person's approval
// 12.6 s after the call is not the command's time (`jobs ID` had printed
// "ran: exit 0 rm old.txt (12.663s)" for an rm that took 63 ms).
func TestCommandDurationLeavesOutTheApprovalWait(t *testing.T) {
	at := func(ms int) time.Time { return foldStart.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name    string
		decided time.Time
		want    time.Duration
	}{
		{"allowed by the rules at once (no decision time)", time.Time{}, 12663 * time.Millisecond},
		{"approved by a person 12.6 s after the call", at(12600), 63 * time.Millisecond},
		{"a decision time before the call is not used", at(-5000), 12663 * time.Millisecond},
		{"a decision time after the result is not used", at(20000), 12663 * time.Millisecond},
		{"decided at the result's instant", at(12663), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commandDuration(at(0), tt.decided, at(12663)); got != tt.want {
				t.Errorf("commandDuration = %v, want %v", got, tt.want)
			}
		})
		t.Run(tt.name+", folded", func(t *testing.T) {
			p := newProgress(Snapshot{ID: strings.Repeat("a", 32), Status: StatusRunning, MaxSteps: 10, Commands: []Command{}}, deepseek.FlashPrice)
			use := evToolUse("b1", "Bash", "rm old.txt")
			use.Time = at(0)
			p, _ = fold(p, use)
			p.addVerdict(policy.Verdict{ToolUseID: "b1", Tool: "Bash", Verdict: policy.AllowedByHuman, Reason: "approved by alice", Decided: tt.decided})
			res := evToolResult("b1", false, intp(0))
			res.Time = at(12663)
			p, _ = fold(p, res)
			c := p.snap.Commands[0]
			if c.DurationMS == nil || *c.DurationMS != tt.want.Milliseconds() {
				t.Errorf("command = %+v, want duration_ms %d", c, tt.want.Milliseconds())
			}
			if l := p.snap.Ledger; len(l) != 1 || l[0].Verdict != policy.AllowedByHuman {
				t.Errorf("ledger = %+v, want the person's verdict", l)
			}
		})
	}
}

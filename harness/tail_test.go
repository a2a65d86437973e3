package harness

import (
	"strings"
	"testing"
	"time"
)

// The tail of a command's output is its last lines, bounded, with every
// control character that could drive a terminal escaped.
func TestOutputTail(t *testing.T) {
	var many strings.Builder
	for i := range 30 {
		many.WriteString("line " + string(rune('a'+i%26)) + "\n")
	}
	cases := []struct {
		name, in, want string
	}{
		{"empty", "\n\n", ""},
		{"last lines", many.String(), strings.Join(strings.Split(strings.TrimSpace(many.String()), "\n")[20:], "\n")},
		{"escapes", "ok\x1b[2J\rdone\x07\tx\u0085", `ok\x1b[2J\x0ddone\x07` + "\tx" + `\u0085`},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
	}
	for _, c := range cases {
		if got := OutputTail(c.in); got != c.want {
			t.Errorf("%s: OutputTail = %q, want %q", c.name, got, c.want)
		}
	}
	long := OutputTail(strings.Repeat("é", 3000))
	if len(long) > TailBytes+len("…") || !strings.HasPrefix(long, "…é") {
		t.Errorf("a long line: %d bytes, starts %q", len(long), long[:8])
	}
}

// A Bash command Claude Code moved to the background has no exit status
// yet, though its result is not an error: it is reported as running in the
// background, not as exit 0.
func TestBackgroundedCommandHasNoExitCode(t *testing.T) {
	line := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"Command did not complete within its 120s timeout and was moved to the background (ID: bh6x)","is_error":false}]},` +
		`"tool_use_result":{"stdout":"","stderr":"","interrupted":false,"isImage":false,"backgroundTaskId":"bh6x"}}`
	evs := ParseLine([]byte(line), time.Now())
	if len(evs) != 1 || evs[0].ToolResult == nil {
		t.Fatalf("events %+v", evs)
	}
	if tr := evs[0].ToolResult; tr.ExitCode != nil || tr.Background != "bh6x" {
		t.Fatalf("exit code %v, background %q; want none and bh6x", tr.ExitCode, tr.Background)
	}
	done := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":"ok","is_error":false}]},"tool_use_result":{"stdout":"ok","stderr":"","interrupted":false}}`
	if tr := ParseLine([]byte(done), time.Now())[0].ToolResult; tr.ExitCode == nil || *tr.ExitCode != 0 || tr.Background != "" {
		t.Fatalf("a finished command: %+v", tr)
	}
}

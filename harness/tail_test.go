package harness

import (
	"strings"
	"testing"
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

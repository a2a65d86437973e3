package harness

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of a command's output tail.
const (
	TailLines = 10
	TailBytes = 1024
)

// OutputTail is the end of a tool's output as evidence for the caller: its
// last TailLines non-empty-trailing lines, at most TailBytes of them (cut
// at the front on a rune boundary, marked "…"), with every control
// character but newline and tab escaped (\x1b, \r, …) and invalid UTF-8
// replaced, so a terminal or a model reading it sees text, never escape
// sequences.
func OutputTail(out string) string {
	out = strings.TrimRight(out, "\n\r\t ")
	if out == "" {
		return ""
	}
	// Take a little more than the bound before escaping: escapes only grow.
	if len(out) > 4*TailBytes {
		out = out[len(out)-4*TailBytes:]
	}
	lines := strings.Split(out, "\n")
	if len(lines) > TailLines {
		lines = lines[len(lines)-TailLines:]
	}
	s := escapeControl(strings.Join(lines, "\n"))
	if len(s) <= TailBytes {
		return s
	}
	cut := len(s) - TailBytes
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// escapeControl writes control characters (C0 but \n and \t, DEL, C1) as
// Go-style escapes and invalid bytes as U+FFFD.
func escapeControl(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

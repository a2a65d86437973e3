// Package termtext makes untrusted text (a job's command, a path, a line of
// the daemon's log) safe to show on a terminal: control characters — escape
// sequences, carriage returns, backspaces, bidi overrides, invalid bytes —
// become visible escapes, so the text cannot hide part of itself or rewrite
// what is already on the screen.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible is s with every control character made visible (\t, \r, \x1b as
// \u{1b}, an invalid byte as \xNN); newlines stay, so a multi-line command
// shows on several lines. At most limit runes are kept, the rest counted.
func Visible(s string, limit int) string {
	return escape(s, limit, false)
}

// Line is Visible with newlines shown as \n too: exactly one line, for a
// path or a log line.
func Line(s string, limit int) string {
	return escape(s, limit, true)
}

func escape(s string, limit int, oneLine bool) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n >= limit {
			fmt.Fprintf(&b, "… (%d more bytes)", len(s)-i)
			break
		}
		n++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && oneLine:
			b.WriteString(`\n`)
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

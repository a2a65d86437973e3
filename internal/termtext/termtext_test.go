package termtext_test

import (
	"os"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/termtext"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func TestVisibleAndLine(t *testing.T) {
	tests := []struct {
		in            string
		limit         int
		visible, line string
	}{
		{"ls -la", 100, "ls -la", "ls -la"},
		{"a\nb", 100, "a\nb", `a\nb`},
		{"rm -rf /\r\x1b[2Kls", 100, `rm -rf /\r\u{1b}[2Kls`, `rm -rf /\r\u{1b}[2Kls`},
		{"x\u202ey\tz", 100, `x\u{202e}y\tz`, `x\u{202e}y\tz`},
		{"bad\xffbyte", 100, `bad\xffbyte`, `bad\xffbyte`},
		{"abcdef", 3, "abc… (3 more bytes)", "abc… (3 more bytes)"},
		{"\n\n\n\n", 2, "\n\n… (2 more bytes)", `\n\n… (2 more bytes)`},
	}
	for _, tt := range tests {
		if got := termtext.Visible(tt.in, tt.limit); got != tt.visible {
			t.Errorf("Visible(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.visible)
		}
		if got := termtext.Line(tt.in, tt.limit); got != tt.line {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.line)
		}
	}
}

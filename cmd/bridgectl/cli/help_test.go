package cli

import (
	"strings"
	"testing"
)

// Every command's help is printed whole (the masker must not eat
// part of a placeholder URL), and bridgectl has a version like bridge's.
func TestHelpIsWholeAndVersion(t *testing.T) {
	te := newTestEnv(t)
	for _, c := range commands() {
		out, _, _ := te.run(c.Name, "--help")
		if strings.Count(out, "(") != strings.Count(out, ")") || strings.Contains(out, "…") {
			t.Errorf("%s --help is mangled (unbalanced parentheses or a masked placeholder):\n%s", c.Name, out)
		}
	}
	if out := te.must("help"); !strings.Contains(out, "version") {
		t.Errorf("help does not list version:\n%s", out)
	}
	old := Version
	Version = "v9.8.7-test"
	t.Cleanup(func() { Version = old })
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := te.run(args...)
		if code != 0 || out != "bridgectl v9.8.7-test\n" || errs != "" {
			t.Errorf("%v: exit %d %q %q", args, code, out, errs)
		}
	}
}

// unwrap joins wrapped help lines back into one line of single spaces, so a
// test can look for a usage or a description whatever the wrapping.
func unwrap(s string) string { return strings.Join(strings.Fields(s), " ") }

// Every line of `bridgectl --help` and of each command's --help fits an
// 80-column terminal (the usage column was padded to ~131, so each command
// wrapped over 2–3 lines there), with tabs counted to their stop, and the
// command list still names every command with its description.
func TestHelpFitsEightyColumns(t *testing.T) {
	te := newTestEnv(t)
	pages := map[string][]string{"--help": {"--help"}, "help": {"help"}}
	for _, c := range commands() {
		pages[c.Name+" --help"] = []string{c.Name, "--help"}
		pages["help "+c.Name] = []string{"help", c.Name}
	}
	for name, args := range pages {
		t.Run(name, func(t *testing.T) {
			out, errs, code := te.run(args...)
			if code != 0 || errs != "" || out == "" {
				t.Fatalf("exit %d, stderr %q, stdout %q", code, errs, out)
			}
			for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := columns(line); n > 80 {
					t.Errorf("line %d is %d columns:\n%s", i+1, n, line)
				}
			}
		})
	}
	list := te.must("--help")
	for _, c := range commands() {
		if !strings.Contains(unwrap(list), " "+commandName(c)+" "+unwrap(c.Short)+" ") {
			t.Errorf("--help does not list %s with its description %q:\n%s", commandName(c), c.Short, list)
		}
	}
}

// columns is how wide line is on a terminal: one column a rune, a tab to
// the next multiple of 8.
func columns(line string) int {
	n := 0
	for _, r := range line {
		if r == '\t' {
			n += 8 - n%8
			continue
		}
		n++
	}
	return n
}

// The wrapping keeps a table row's continuation under its text, a usage's
// [bracketed group] whole, and a `quoted command` on one line.
func TestHelpWrapping(t *testing.T) {
	long := strings.Repeat("word ", 20)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"fits: as written", "  key   short text\n  other text", "  key   short text\n  other text\n"},
		{"paragraph reflowed", long + "\n" + "next line",
			"word word word word word word word word word word word word word word word word\nword word word word next line\n"},
		{"table row wraps under its text", "  key       " + long + "\n  next      row",
			"  key       word word word word word word word word word word word word word\n            word word word word word word word\n  next      row\n"},
		{"blank line kept", long + "\n\n" + "after",
			"word word word word word word word word word word word word word word word word\nword word word word\n\nafter\n"},
		{"quoted command whole", strings.Repeat("x", 60) + " run `bridgectl url --bare` now",
			strings.Repeat("x", 60) + " run\n`bridgectl url --bare` now\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printLong(&b, tt.in)
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
	var b strings.Builder
	printUsage(&b, "setup [--yes] [--key-stdin] [--roots DIRS] [--approval on|off] [--claude PATH] [--tunnel none|quick|named]")
	want := "usage: bridgectl setup [--yes] [--key-stdin] [--roots DIRS] [--approval on|off]\n" +
		"                       [--claude PATH] [--tunnel none|quick|named]\n"
	if b.String() != want {
		t.Errorf("usage:\n%s\nwant\n%s", b.String(), want)
	}
}

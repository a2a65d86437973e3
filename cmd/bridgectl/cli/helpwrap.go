package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// helpWidth is the terminal width every --help line fits in: 80 columns, the
// width a terminal opens with, so no line wraps mid-word there.
const helpWidth = 80

// fill writes text word-wrapped to helpWidth: the first line starts with
// first, the next ones with rest (both counted in the width). A word longer
// than the line is kept whole on a line of its own.
func fill(w io.Writer, first, rest string, words []string) {
	line, n := first, utf8.RuneCountInString(first)
	empty := true
	for _, word := range words {
		wl := utf8.RuneCountInString(word)
		if !empty && n+1+wl > helpWidth {
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			line, n, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			line += " "
			n++
		}
		line += word
		n += wl
		empty = false
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}

// printLong writes a command's long help, reflowing to helpWidth only the
// blocks that would not fit: a block is a line and the lines that continue
// it (indented to where its text starts), so a table row ("  key   text")
// wraps under its own text and a plain paragraph wraps as a paragraph. Blocks
// that fit are printed as written.
func printLong(w io.Writer, long string) {
	lines := strings.Split(long, "\n")
	for i := 0; i < len(lines); {
		hang := hangIndent(lines[i])
		j := i + 1
		for strings.TrimSpace(lines[i]) != "" && j < len(lines) && continues(lines[j], hang) {
			j++
		}
		block := lines[i:j]
		if !fits(block) {
			head := lines[i][:hang]
			var words []string
			for k, l := range block {
				if k == 0 {
					l = l[hang:]
				}
				words = append(words, l)
			}
			fill(w, head, strings.Repeat(" ", hang), helpWords(strings.Join(words, " "), helpWidth-hang))
		} else {
			for _, l := range block {
				fmt.Fprintln(w, l)
			}
		}
		i = j
	}
}

// hangIndent is the column where a line's text starts: after its leading
// spaces, and for a table row ("  --flag   text", "key       text") after the
// term and the run of two or more spaces that follows it.
func hangIndent(l string) int {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	rest := l[indent:]
	if gap := strings.Index(rest, "  "); gap > 0 && gap <= 24 {
		after := strings.TrimLeft(rest[gap:], " ")
		if after != "" {
			return len(l) - len(after)
		}
	}
	return indent
}

// continues reports whether l carries on the block whose text starts at
// column hang: it is indented exactly there and is not a table row of its own.
func continues(l string, hang int) bool {
	if strings.TrimSpace(l) == "" {
		return false
	}
	indent := len(l) - len(strings.TrimLeft(l, " "))
	return indent == hang && hangIndent(l) == hang
}

func fits(lines []string) bool {
	for _, l := range lines {
		if utf8.RuneCountInString(l) > helpWidth {
			return false
		}
	}
	return true
}

// helpWords splits text at its spaces, keeping a `quoted command` whole
// unless that word would be longer than room, a line's width for it.
func helpWords(text string, room int) []string {
	var words []string
	var word strings.Builder
	quoted := false
	flush := func() {
		if word.Len() == 0 {
			return
		}
		if wd := word.String(); utf8.RuneCountInString(wd) > room {
			words = append(words, strings.Fields(wd)...)
		} else {
			words = append(words, wd)
		}
		word.Reset()
	}
	for _, r := range text {
		switch {
		case r == '`':
			quoted = !quoted
		case !quoted && (r == ' ' || r == '\n' || r == '\t'):
			flush()
			continue
		}
		word.WriteRune(r)
	}
	flush()
	return words
}

// usageWords splits a usage line into the pieces it may break between: a
// bracketed group ("[--roots DIRS]") stays whole unless it is longer than a
// line on its own, then it breaks at its spaces.
func usageWords(usage string, room int) []string {
	var words []string
	depth, start := 0, 0
	flush := func(end int) {
		if g := strings.TrimSpace(usage[start:end]); g != "" {
			if utf8.RuneCountInString(g) > room {
				words = append(words, strings.Fields(g)...)
			} else {
				words = append(words, g)
			}
		}
		start = end
	}
	for i, r := range usage {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case r == ' ' && depth == 0:
			flush(i)
		}
	}
	flush(len(usage))
	return words
}

// printUsage writes "usage: bridgectl USAGE", continued lines indented under
// the first argument.
func printUsage(w io.Writer, usage string) {
	words := usageWords(usage, helpWidth/2)
	head := "usage: bridgectl " + words[0] + " "
	if len(words) == 1 {
		fmt.Fprintln(w, strings.TrimSpace(head))
		return
	}
	fill(w, head, strings.Repeat(" ", len(head)), words[1:])
}

// printFlags writes a flag set's flags like flag.PrintDefaults, but with the
// double-dash spelling the help text uses, no tabs, and wrapped to helpWidth.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		switch f.DefValue {
		case "", "false", "0", "0s", "[]":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fill(w, "      ", "      ", helpWords(usage, helpWidth-6))
	})
}

// commandName is how the command list names c: the leading words of its
// usage ("job kill", "register"), without arguments or flags.
func commandName(c *Command) string {
	var name []string
	for _, word := range strings.Fields(c.Usage) {
		if strings.Trim(word, "abcdefghijklmnopqrstuvwxyz") != "" {
			break
		}
		name = append(name, word)
	}
	if len(name) == 0 {
		return c.Name
	}
	return strings.Join(name, " ")
}

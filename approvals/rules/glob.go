package rules

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// globFiles returns the files a glob pattern (absolute, or relative to the
// workspace) matches read as bash reads it (goGlob), and also as Go's own
// syntax reads it when Go accepts it: where the two differ ([!0-x] is a set
// holding ! to Go), the rules check both sets of files.
//
// The expansion spends b (a nil one: a budget of its own) and ends with
// errGlobWork when it is gone.
func globFiles(pattern, workspace string, b *globBudget) (matches []string, why string, err error) {
	bash, why := goGlob(pattern)
	if why != "" {
		return nil, why, nil
	}
	if b == nil {
		b = newGlobBudget()
	}
	matches, err = b.glob(inWorkspace(bash, workspace))
	if err != nil || bash == pattern {
		return matches, "", err
	}
	more, err := b.glob(inWorkspace(pattern, workspace))
	if errors.Is(err, errGlobWork) {
		return nil, "", err
	}
	if err == nil {
		seen := map[string]bool{}
		for _, m := range matches {
			seen[m] = true
		}
		for _, m := range more {
			if !seen[m] {
				matches = append(matches, m)
			}
		}
	}
	return matches, "", nil
}

// inWorkspace joins a relative pattern to the workspace, escaped.
func inWorkspace(pattern, workspace string) string {
	if filepath.IsAbs(pattern) {
		return pattern
	}
	return filepath.Clean(escapeGlob(workspace) + string(filepath.Separator) + pattern)
}

// goGlob rewrites a bash glob pattern in the syntax of Go's filepath.Match,
// so the files it is checked against are the ones bash expands it to. bash
// negates a bracket expression with [! as well as [^, takes a ] first in the
// set (after the negation) as itself and a - first or last in the set as
// itself; Go knows only [^, and refuses the others. A [ that is never closed
// (bash reads it as itself) is left for Go to refuse: a human decides. A POSIX class ([:alpha:], [=a=], [.a.])
// has no Go spelling at all, and Go reads it as a different set: why says so.
func goGlob(p string) (pattern, why string) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			b.WriteByte('\\')
			if i+1 < len(p) {
				i++
				b.WriteByte(p[i])
			}
		case '[':
			end, set, neg, why := bracket(p, i)
			if why != "" {
				return "", why
			}
			if end < 0 { // bash reads it as itself; Go refuses it: a human decides
				b.WriteByte('[')
				continue
			}
			b.WriteByte('[')
			if neg {
				b.WriteByte('^')
			}
			for j := 0; j < len(set); j++ {
				switch c := set[j]; {
				case c == '\\' && j+1 < len(set):
					b.WriteString(set[j : j+2])
					j++
				case c == ']' && j == 0, c == '-' && (j == 0 || j == len(set)-1):
					b.WriteByte('\\')
					b.WriteByte(c)
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte(']')
			i = end
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String(), ""
}

// bracket reads the bracket expression that opens at p[i] the way bash does:
// it returns the index of its closing ], the set between the negation and
// that ], and whether it is negated; end is -1 when the [ is never closed.
func bracket(p string, i int) (end int, set string, neg bool, why string) {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		neg = true
		j++
	}
	start := j
	if j < len(p) && p[j] == ']' {
		j++
	}
	for ; j < len(p); j++ {
		switch {
		case p[j] == '\\':
			j++
		case p[j] == '[' && j+1 < len(p) && strings.IndexByte(":=.", p[j+1]) >= 0:
			return 0, "", false, "uses a POSIX character class ([:name:], [=c=], [.c.]), which the rules cannot match"
		case p[j] == ']':
			return j, p[start:j], neg, ""
		}
	}
	return -1, "", false, ""
}

// escapeGlob makes a literal path safe to join in front of a Go pattern.
func escapeGlob(s string) string {
	if runtime.GOOS == "windows" { // \ is the separator there, not an escape
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unseenExpansions checks the words bash expands as globs for what the
// rules' reading of them cannot see. A pattern that matches nothing reaches
// the program as written, which the rules have read; one that matches
// reaches it as the names it matches, and those are arguments the rules
// never read in two places:
//   - a name that starts with - is an option to the program: a file the job
//     called --files0-from=list or -exec turns `sort --f*` or
//     `find . -?xec …` into a form the rules refuse. So a pattern whose first
//     character can match - (a literal -, *, ?, or a bracket expression
//     admitting -) goes to a human when a name in the workspace that starts
//     with - matches its first component; `./*` and `src/*` cannot start a
//     name with - and are not affected;
//   - a word the program reads as code (an awk program, a sed script) would
//     be replaced by file names: any match goes to a human.
//
// The names are read when the command is classified; a file created after
// that, before the command runs, needs a process of the job already running
// beside it (Bash run_in_background and Monitor go to a human), which could
// then run the options itself, in the same sandbox.
func unseenExpansions(words []word, code map[int]bool, p Policy) (Verdict, bool) {
	workspace := p.Workspace
	for i, w := range words {
		if w.glob == "" {
			continue
		}
		if mayStartWithDash(w.glob) {
			matches, why, err := globFiles(firstComponent(w.glob), workspace, p.globs)
			if why != "" || err != nil {
				return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q is a glob whose matches the rules cannot list, and one may start with - and be taken for an option: a human decides", w.text)}, true
			}
			for _, m := range matches {
				if name := filepath.Base(m); strings.HasPrefix(name, "-") {
					return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches %q, which the program would take as an option: a human decides (written ./%s, no match can be taken for an option)", w.text, name, w.text)}, true
				}
			}
		}
		if code[i] {
			matches, why, err := globFiles(w.glob, workspace, p.globs)
			if why != "" || err != nil || len(matches) > 0 {
				return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q is the program's code, and bash would replace it with the names of the files it matches: a human decides (quote it)", w.text)}, true
			}
		}
	}
	return Verdict{}, false
}

// mayStartWithDash reports whether a name matched by the bash pattern p
// (quoted characters escaped) can start with -.
func mayStartWithDash(p string) bool {
	if p == "" {
		return false
	}
	switch p[0] {
	case '\\':
		return len(p) > 1 && p[1] == '-'
	case '*', '?':
		return true
	case '[':
		end, _, _, why := bracket(p, 0)
		if why != "" {
			return true // a POSIX class: the rules cannot tell
		}
		if end < 0 {
			return false // bash reads an unclosed [ as itself
		}
		set := p[:end+1]
		bash, why := goGlob(set)
		if why != "" {
			return true
		}
		ok, err := filepath.Match(bash, "-")
		goOK, goErr := filepath.Match(set, "-")
		return ok || err != nil || goOK && goErr == nil
	}
	return p[0] == '-'
}

// firstComponent returns the bash pattern p up to its first /, which the
// first name of a match has to match.
func firstComponent(p string) string {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && p[i+1] == '/' {
				return p[:i]
			}
			i++
		case '/':
			return p[:i]
		}
	}
	return p
}

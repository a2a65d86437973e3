package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// writeTargets are the paths one command writes that its words name.
type writeTargets struct {
	paths    []string // written: a file, or a directory the program may put files in
	into     []string // what the program puts into a path that is a directory (cp a b dir writes dir/a and dir/b)
	parents  bool     // into keeps its directories below it (cp --parents)
	suffixes []string // a backup of each path is kept under its name with one of these appended (cp -b -S)
	why      string   // the command plants what runs later without naming it (git init --template)
}

// shells run the command line given to -c; eval its arguments.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "yash"}

// maxNesting bounds the command lines inside command lines (bash -c '…')
// read for what they write.
const maxNesting = 4

// maxWriteTargets bounds the names checked in the directories one command
// writes into.
const maxWriteTargets = 1 << 16

// plantsRunLater denies a command line any of whose commands names, as what
// it writes, a path that runs later (runsLater), as the Write tool is denied
// one: wherever the command stands in the line (chained, in a substitution,
// after a wrapper such as nice or xargs, in a bash -c string), and through an
// output redirection. A path named through an expansion ($D/pre-commit) or
// inside a file the program reads (a patch, a script) is not seen.
func plantsRunLater(pc parsed, p Policy) (Verdict, bool) {
	return plantsIn(pc, sandbox.Guard{Workspace: p.Workspace, Protected: p.Protected}, p.globs, 0)
}

func plantsIn(pc parsed, g sandbox.Guard, b *globBudget, depth int) (Verdict, bool) {
	for _, o := range pc.outputs {
		if v, bad := checkTargets(g, b, writeTargets{paths: []string{o.text}}); bad {
			return v, true
		}
	}
	for _, call := range pc.calls {
		for _, words := range invoked(call) {
			name := programBase(words[0].text)
			args := texts(words[1:])
			if depth < maxNesting {
				if line, ok := commandLineIn(name, args); ok {
					if v, bad := plantsIn(parseCommand(line), g, b, depth+1); bad {
						return v, true
					}
				}
			}
			w, ok := writers[name]
			if !ok {
				continue
			}
			if r := programs[name].rewrite; r != nil {
				if drop, why := r(args); why == "" && drop >= 0 {
					args = slices.Delete(args, drop, drop+1)
				}
			}
			if v, bad := checkTargets(g, b, w(args)); bad {
				return v, true
			}
		}
	}
	return Verdict{}, false
}

// invoked returns the command, and when its program runs another one given
// by its arguments (a wrapper such as nice, env, xargs or sudo; find -exec),
// each tail of its words too: the wrapper's own options are never a program
// the rules know to write.
func invoked(call []word) [][]word {
	out := [][]word{call}
	if name := programBase(call[0].text); slices.Contains(wrappers, name) || name == "find" {
		for i := 1; i < len(call); i++ {
			out = append(out, call[i:])
		}
	}
	return out
}

// commandLineIn returns the command line a shell runs from -c, or eval from
// its arguments.
func commandLineIn(name string, args []string) (string, bool) {
	if name == "eval" {
		return strings.Join(args, " "), len(args) > 0
	}
	if !slices.Contains(shells, name) {
		return "", false
	}
	for i, a := range args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// programBase is the name a command's first word runs, for the writers: the
// last component of a path, folded (on a case-insensitive disk CP runs cp).
func programBase(w string) string {
	if i := strings.LastIndexAny(w, `/\`); i >= 0 {
		w = w[i+1:]
	}
	return normalizeProgram(w)
}

// checkTargets denies what t names that runs later: a path as written or
// resolved, what bash's glob of it matches, and the backups of those; and for
// a path that is a directory, each name put into it. The directory itself is
// checked, so a name put into it is checked when the name alone runs later
// (.npmrc, .git) or a file of that name is there already: cp writes through
// a symlink it finds.
func checkTargets(g sandbox.Guard, b *globBudget, t writeTargets) (Verdict, bool) {
	if t.why != "" {
		return Verdict{Decision: Deny, Reason: t.why + ": no job may plant what runs later outside any sandbox"}, true
	}
	tooMany := Verdict{Decision: Deny, Reason: fmt.Sprintf("the command's globs match more than the %d files the rules check for what runs later outside any sandbox: name fewer", maxGlobWork)}
	var names []string
	for _, s := range t.into {
		into, ok := withMatches(s, g.Workspace, b)
		if !ok {
			return tooMany, true
		}
		for _, m := range into {
			if t.parents {
				names = append(names, m)
			} else {
				names = append(names, filepath.Base(m))
			}
		}
	}
	check := func(c string) (Verdict, bool) {
		for _, form := range append([]string{c}, suffixed(c, t.suffixes)...) {
			if rel, later := runLaterTarget(g, form); later {
				return Verdict{Decision: Deny, Reason: runLaterReason(rel)}, true
			}
		}
		return Verdict{}, false
	}
	tried := 0
	for _, p := range t.paths {
		paths, ok := withMatches(p, g.Workspace, b)
		if !ok {
			return tooMany, true
		}
		for _, m := range paths {
			if v, bad := check(m); bad {
				return v, true
			}
			if !strings.HasSuffix(p, "/") && !isDir(m, g.Workspace) {
				continue
			}
			if tried += len(names); tried > maxWriteTargets {
				return Verdict{Decision: Deny, Reason: fmt.Sprintf("the command puts more than %d files into directories, more than the rules check for what runs later outside any sandbox: split it", maxWriteTargets)}, true
			}
			for _, n := range names {
				into := filepath.Join(m, n)
				if !nameRunsLater(n, t.suffixes, g.Workspace) && !exists(into, g.Workspace) {
					continue
				}
				if v, bad := check(into); bad {
					return v, true
				}
			}
		}
	}
	return Verdict{}, false
}

// nameRunsLater reports whether n, or a backup of it, runs later by its name
// alone, wherever it is put.
func nameRunsLater(n string, suffixes []string, workspace string) bool {
	for _, f := range append([]string{n}, suffixed(n, suffixes)...) {
		if _, later := runsLater(f, workspace); later {
			return true
		}
	}
	return false
}

func suffixed(p string, suffixes []string) []string {
	var out []string
	for _, s := range suffixes {
		out = append(out, p+s)
	}
	return out
}

// runLaterTarget reports the runs-later path c names, as written or
// resolved.
func runLaterTarget(g sandbox.Guard, c string) (string, bool) {
	if c == "" || c == unreadWord.text {
		return "", false
	}
	for _, form := range []string{c, admit(g, c).Resolved} {
		if rel, later := runsLater(form, g.Workspace); form != "" && later {
			return rel, true
		}
	}
	return "", false
}

// withMatches returns p and, when it holds a glob character, the files it
// matches (bash passes p itself when nothing matches); ok is false when the
// matches are past the call's glob budget or maxGlobMatches.
func withMatches(p, workspace string, b *globBudget) (paths []string, ok bool) {
	out := []string{p}
	if !strings.ContainsAny(p, "*?[") {
		return out, true
	}
	matches, _, err := globFiles(p, workspace, b)
	if errors.Is(err, errGlobWork) || len(matches) > maxGlobMatches {
		return nil, false
	}
	return append(out, matches...), true
}

func exists(p, workspace string) bool {
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	_, err := os.Lstat(p)
	return err == nil
}

func isDir(p, workspace string) bool {
	fi, err := os.Stat(resolveAsWritten(p, workspace))
	return err == nil && fi.IsDir()
}

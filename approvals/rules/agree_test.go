package rules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// knownDifferences are the ways the new command rules are looser than the
// old classifier (oldclassifier_test.go), each understood and justified:
// which inputs, and why the new verdict is right. Being stricter needs no
// entry.
var knownDifferences = []struct {
	name, why string
	applies   func(cmd string, p Policy, old, new Verdict) bool
}{
	{
		name: "a protected path only inside a comment",
		why:  "bash never passes a comment to the program; the command still goes to a human, and is denied when its own words name a protected path",
		applies: func(cmd string, p Policy, old, new Verdict) bool {
			before, ok := beforeComment(cmd)
			return ok && old.Decision == Deny && new.Decision == Ask && ClassifyCommand(before, p).Decision != Deny
		},
	},
	{
		name: "invalid UTF-8",
		why:  "the parser refuses it, so a human sees the command before its paths are checked; commands arrive as JSON strings, which decode to valid UTF-8",
		applies: func(cmd string, _ Policy, old, new Verdict) bool {
			return !utf8.ValidString(cmd) && new.Decision == Ask && strings.Contains(new.Reason, "invalid UTF-8")
		},
	},
	{
		name: "a bracket expression bash reads and Go refuses",
		why:  "[]x], [!]x] and [a-] are sets to bash (a ] first, a - at either end, as themselves); the old classifier gave Go's syntax error to a human, the new rules match them as bash does (goGlob) and check what they match",
		applies: func(cmd string, _ Policy, old, new Verdict) bool {
			var arg string
			if _, err := fmt.Sscanf(old.Reason, "argument %q is a malformed glob", &arg); err != nil || new.Decision != Allow {
				return false
			}
			// An allow means Go took the rewritten pattern (a syntax error
			// would have gone to a human); the rewriting made the difference.
			pattern, why := goGlob(arg)
			return why == "" && pattern != arg
		},
	},
}

// beforeComment returns cmd up to its first comment, if it parses and has one.
func beforeComment(cmd string) (string, bool) {
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return "", false
	}
	at := -1
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok && (at < 0 || int(c.Hash.Offset()) < at) {
			at = int(c.Hash.Offset())
		}
		return true
	})
	if at < 0 || at > len(cmd) {
		return "", false
	}
	return cmd[:at], true
}

// FuzzCommandRulesAgreeWithOldClassifier feeds the same command to the old
// classifier and the new rules, under both sed dialects: the new ones may be
// stricter, never looser (an old "ask" the new rules allow, or an old "deny"
// they only ask about), unless knownDifferences explains it. When both allow,
// they must say so in the same words.
func FuzzCommandRulesAgreeWithOldClassifier(f *testing.F) {
	w := newWorld(f)
	for _, s := range testCommands(f) {
		f.Add(s)
	}
	for _, s := range []string{"cat " + w.env, "cat " + w.state + "/approvals/x.request.json", "ls " + w.ws + "-evil",
		"git -C " + w.state + " status", "cat " + filepath.Join(w.ws, "main.go"), "touch " + w.state + "/approval-off",
		"cat " + w.env + " # x", "ls # " + w.env, "cat " + w.env + " \xff", "cat " + w.env + " ]] } then !"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		was := bsdSed
		defer func() { bsdSed = was }()
		for _, bsd := range []bool{false, true} {
			bsdSed = bsd
			old, new := oldClassifyCommand(cmd, w.policy), ClassifyCommand(cmd, w.policy)
			if rank(new.Decision) < rank(old.Decision) && !explained(cmd, w.policy, old, new) {
				t.Fatalf("bsd sed %v: %q: the old classifier said %s (%s), the new rules %s (%s)",
					bsd, cmd, old.Decision, old.Reason, new.Decision, new.Reason)
			}
			if old.Decision == Allow && new.Decision == Allow && old.Reason != new.Reason {
				t.Fatalf("%q: both allow, with reasons %q and %q", cmd, old.Reason, new.Reason)
			}
		}
	})
}

func explained(cmd string, p Policy, old, new Verdict) bool {
	for _, d := range knownDifferences {
		if d.applies(cmd, p, old, new) {
			return true
		}
	}
	return false
}

// testCommands returns every string literal in the tests of the approvals
// packages: every command they classify among them, to seed the corpus.
func testCommands(tb testing.TB) []string {
	tb.Helper()
	var files []string
	for _, pattern := range []string{"*_test.go", "../*_test.go", "../prompt/*_test.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	seen := map[string]bool{}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
			return true
		})
	}
	if len(out) < 100 {
		tb.Fatalf("only %d string literals in %v: the seeds are missing", len(out), files)
	}
	return out
}

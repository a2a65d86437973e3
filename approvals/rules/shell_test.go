package rules

import (
	"strings"
	"testing"
)

// TestClassifyCommandShellSyntax: what the syntax tree shows goes to a
// human, and quoting is read the way bash reads it.
func TestClassifyCommandShellSyntax(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"cat main.go # hi", Ask, "comment"},
		{"cat " + w.env + " # hi", Deny, "protected"}, // a comment does not soften a deny
		{"! ls", Ask, "negation"},
		{"ls @(main.go)", Ask, "extended glob"},
		{"declare -x", Ask, "declaration (declare)"},
		{"coproc ls", Ask, "compound command"},
		{"[[ -f main.go ]]", Ask, "test [[ ]]"},
		{"((1))", Ask, "arithmetic command"},
		{"time ls", Ask, "time runs another program"},
		{"FOO=1 ls", Ask, "foo=1 is not on the allow list"},
		{"PATH=. ls", Ask, "path=. is not on the allow list"},
		{"{ ls; }", Ask, "(;)"},
		{"ls <(id)", Ask, "redirection (<)"},
		{"cat <<E\nx\nE", Ask, "redirection (<)"},
		{"ls 2>/dev/null", Ask, "redirection (>)"},
		{"echo $((1+1))", Ask, "$("},
		{`echo "a\$b"`, Ask, "variable expansion"},
		{"ls \\\nmain.go", Ask, "newline"}, // the tree no longer shows the newline
		{"echo \xff", Ask, "cannot be parsed (invalid UTF-8"},
		{`ls "unterminated`, Ask, "unbalanced quotes"},
		{"echo a\\ b", Allow, ""},
		{`cat "main".go`, Allow, ""},
		{`cat 'main.go'`, Allow, ""},
		{`ls \(x`, Allow, ""},
		{`cat m\ain.go`, Allow, ""},
		{`'cat' main.go`, Allow, ""},
		{`"git" push`, Ask, "git push"},
		{`g"i"t push`, Ask, "git push"},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			v := ClassifyCommand(c.cmd, w.policy)
			if v.Decision != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("ClassifyCommand(%q) = %s (%s), want %s containing %q", c.cmd, v.Decision, v.Reason, c.want, c.reason)
			}
		})
	}
}

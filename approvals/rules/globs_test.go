package rules

import (
	"strings"
	"testing"
)

// TestClassifyCommandBracketGlobs: bash's bracket expressions ([!x], a ]
// first in the set, POSIX classes) are read as bash reads them, so a glob
// spelling of a protected, outside or .env path meets the same verdict as
// its plain spelling.
func TestClassifyCommandBracketGlobs(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"cat state-lin[!x]/approvals/x.request.json", Deny, "protected"},
		{"ls state-lin[!x]", Deny, "protected"},
		{"cp main.go state-lin[!x]", Deny, "protected"},
		{"cat state-lin[^x]/approvals/x.request.json", Deny, "protected"},
		{"cat 'state-lin[]k]/approvals/x.request.json'", Deny, "protected"},
		{"cat 'state-lin[!]x]/approvals/x.request.json'", Deny, "protected"},
		{"cat out-lin[!x]/secret.txt", Ask, "symlink"},
		{"cat .e[!x]v", Ask, ".env"},
		{"ls 'out-li[!a-z]k'", Ask, "symlink"}, // Go's reading ({!, a-z}) is checked too
		{"cat .e[^x]v", Ask, ".env"},
		{"cat '.e[[:alpha:]]v'", Ask, "character class"},
		{"cat 'state-lin[[:alpha:]]/approvals/x.request.json'", Ask, "character class"},
		{"cat '.e[[=n=]]v'", Ask, "character class"},
		{"cat '.e[[.n.]]v'", Ask, "character class"},
		{"ls out-lin*/", Ask, "symlink"},
		{"ls ./out-lin[!x]/", Ask, "symlink"},
		{"cat src/[!x].ts", Allow, ""},
		{"cat src/[a].ts", Allow, ""},
		{"cat 'main[.go'", Ask, "malformed glob"}, // bash reads the unclosed [ as itself
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

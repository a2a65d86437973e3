package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyCommandSedOperandsWithExpression: once sed has a script from
// -e/--expression (or -f/--file), in any spelling and wherever it stands,
// every operand is a file, so the first one is path-checked too: here p is a
// symlink to a file outside the workspace, and `sed -n p -e p` prints it.
// BSD sed stops reading options at the first operand, so there the first
// operand is the script and the -e after it a file: both readings are
// checked.
func TestClassifyCommandSedOperandsWithExpression(t *testing.T) {
	w := newWorld(t)
	mustDo(t, os.Symlink("../outside/secret.txt", filepath.Join(w.ws, "p")))
	cases := []struct {
		cmd      string
		gnu, bsd Action
		reason   string
	}{
		{"sed -n p -e p", Ask, Ask, "symlink"},
		{"sed -n p --expression=p", Ask, Ask, "symlink"},
		{"sed -n p --expression p", Ask, Ask, "symlink"},
		{"sed -n p --exp p", Ask, Ask, "symlink"},
		{"sed -n p --e=p", Ask, Ask, "symlink"},
		{"sed p -ne p", Ask, Ask, "symlink"},
		{"sed p -nep", Ask, Ask, "symlink"},
		{"sed -n p main.go -e 1p", Ask, Ask, "symlink"},
		{"sed -n p -f prog.sed", Ask, Ask, "sed -f"},
		{"sed -n p -nf prog.sed", Ask, Ask, "sed -f"},
		{"sed -n p --fi=prog.sed", Ask, Ask, "sed -f"},
		{"sed -n 'w /tmp/x' -e p main.go", Ask, Ask, ""}, // BSD: the first operand is the script
		{"sed -n p main.go", Allow, Allow, ""},           // p is the script
		{"sed -n -e p main.go", Allow, Allow, ""},
		{"sed -n -e p -- -e", Allow, Allow, ""},        // after --, -e is a file
		{"sed -n -l 5 p main.go", Ask, Ask, "symlink"}, // BSD sed's -l takes no value: 5 is the script, p a file
		{"sed -n -l 5 1p main.go", Allow, Allow, ""},
	}
	was := bsdSed
	t.Cleanup(func() { bsdSed = was })
	for _, c := range cases {
		for _, bsd := range []bool{false, true} {
			bsdSed = bsd
			want := map[bool]Action{false: c.gnu, true: c.bsd}[bsd]
			v := ClassifyCommand(c.cmd, w.policy)
			if v.Decision != want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("bsd sed %v: ClassifyCommand(%q) = %s (%s), want %s containing %q", bsd, c.cmd, v.Decision, v.Reason, want, c.reason)
			}
		}
	}
}

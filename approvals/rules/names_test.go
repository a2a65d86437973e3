package rules

import (
	"runtime"
	"strings"
	"testing"
)

// TestClassifyCommandProgramNames: Linux and macOS look a program up by its
// exact name, so a name that only matches an allow-list entry after case
// folding, trimming or dropping an extension (HEAD is lwp-request, not head)
// goes to a human. Windows finds NODE.EXE as node.
func TestClassifyCommandProgramNames(t *testing.T) {
	w := newWorld(t)
	folded := Ask
	if runtime.GOOS == "windows" {
		folded = Allow
	}
	cases := []struct {
		cmd    string
		want   Action
		reason string
	}{
		{"HEAD example.org/x", Ask, `"HEAD" is not spelled as on the allow list`},
		{"LS", folded, ""},
		{"'ls '", Ask, "allow list"},
		{"' ls'", Ask, "allow list"},
		{"ls\u00a0", Ask, "allow list"},
		{"ls\u00a0 main.go", Ask, "allow list"},
		{"Cat main.go", folded, ""},
		{"NODE.EXE x.mjs", folded, ""},
		{"Git.exe status", folded, ""},
		{"NPM.CMD run build", folded, ""},
		{"NODE.EXE -e 1", Ask, map[bool]string{true: "inline code", false: "not spelled as on the allow list"}[runtime.GOOS == "windows"]},
		{"'ls.' main.go", Ask, "allow list"},
		{"SUDO ls", Ask, ""},
		{"ls main.go", Allow, "ls is on the allow list"},
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

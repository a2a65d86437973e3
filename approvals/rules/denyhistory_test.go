package rules

import (
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// Git's history holds a deny path's contents whatever the work tree's view:
// with a literal deny path too, and jailed, git's content commands and its
// history with any patch option (-U, --unified, --binary) go to a human.
func TestDenyPathsHistoryIsNeverReadByRule(t *testing.T) {
	bash := func(cmd string) Request { return Request{Tool: "Bash", Input: map[string]any{"command": cmd}} }
	ws := t.TempDir()
	for _, deny := range []string{"secrets/key", "secrets/*"} {
		e := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{deny}}, "")
		p := Policy{Workspace: ws, Allow: append(config.DefaultApproveAllow, "git"), Job: &e, Jailed: true}
		for _, cmd := range []string{
			"git show HEAD:secrets/key", "git cat-file -p HEAD:secrets/key", "git log -p",
			"git log -U1", "git log --unified=1", "git log -1 -U0 -- secrets", "git whatchanged -U3", "git log --binary",
		} {
			if v := Classify(bash(cmd), p); v.Decision == Allow {
				t.Errorf("deny_paths %q: %q runs by rule (%s)", deny, cmd, v.Reason)
			}
		}
		if v := Classify(bash("git log --oneline"), p); v.Decision != Allow {
			t.Errorf("deny_paths %q: git log --oneline (no contents) goes to %s: %s", deny, v.Decision, v.Reason)
		}
	}
}

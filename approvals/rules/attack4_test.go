package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// TestAttack4ProtectedGlobAfterSpentBudgetStillDenies: the job spends the
// call's glob budget with earlier arguments; a later glob argument whose
// only match is a protected path must still deny (as it did when every
// glob was expanded), not merely go to a human.
func TestAttack4ProtectedGlobAfterSpentBudgetStillDenies(t *testing.T) {
	w := newWorld(t)
	for i := range 2000 {
		mustDo(t, os.WriteFile(filepath.Join(w.ws, fmt.Sprintf("f%04d", i)), nil, 0o600))
	}
	hidden := "state-lin?/approvals/x.request.json"
	if v := ClassifyCommand("ls "+hidden, w.policy); v.Decision != Deny {
		t.Fatalf("alone: %+v, want deny", v)
	}
	v := ClassifyCommand("ls f* f* "+hidden, w.policy)
	if v.Decision != Deny {
		t.Errorf("after two globs that spend the budget: %v (%s), want deny", v.Decision, v.Reason)
	}
}

// TestAttack4DenyPathGlobAfterSpentBudgetStillDenies: a deny path (never read
// or written) named through a glob is refused; after earlier arguments spend
// the call's glob budget, the same word only goes to a human.
func TestAttack4DenyPathGlobAfterSpentBudgetStillDenies(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	mustDo(t, err)
	for i := range 2000 {
		mustDo(t, os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%04d", i)), nil, 0o600))
	}
	mustDo(t, os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("k"), 0o600))
	e := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{"secret.txt"}}, "")
	p := Policy{Workspace: ws, Allow: config.DefaultApproveAllow, Job: &e, Jailed: true}
	bash := func(cmd string) Request { return Request{Tool: "Bash", Input: map[string]any{"command": cmd}} }
	if v := Classify(bash("cat secre?.txt"), p); v.Decision != Deny {
		t.Fatalf("alone: %+v, want deny", v)
	}
	v := Classify(bash("cat f* f* secre?.txt"), p)
	if v.Decision != Deny {
		t.Errorf("after two globs that spend the budget: %v (%s), want deny", v.Decision, v.Reason)
	}
}

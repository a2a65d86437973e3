package review

import (
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
)

// Second attack review: a file the scope did not read (over 1 MiB, past the
// read budget, or a blob that did not hold its id) has Lines -1, and Read
// then checks no line of a finding about it: one at line 10^15 is kept,
// though the tool's schema says findings are kept only when "their lines
// exist". It is also marked context whatever it points at, as the file has
// no hunks.
func TestAttackReadKeepsAnyLineOfAFileNotRead(t *testing.T) {
	s := changes.Scope{
		Spec:  changes.ScopeSpec{Kind: changes.ScopeUncommitted},
		Files: []changes.ScopeFile{{Path: "big.sql", Change: changes.Created, Lines: -1}},
	}
	answer := "```json\n" + `{"verdict":"needs_changes","summary":"s","findings":[
 {"title":"far away","body":"x","priority":0,"confidence":0.9,"file":"big.sql","line_start":1000000000000000,"line_end":1000000000000001}
]}` + "\n```\n"
	r := Read(answer, s, "/ws")
	if len(r.Findings) != 0 {
		t.Errorf("a finding at line %d of a file the scope never read (Lines -1) was kept: %+v", r.Findings[0].LineStart, r.Findings[0])
	}
}

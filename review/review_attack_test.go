package review

import (
	"fmt"
	"strings"
	"testing"
)

// Attack review: the fence pattern ends a block at the first ``` it meets,
// so a finding whose body quotes code in a fence (inside the JSON string)
// cuts the block short: no block parses, and every finding is lost.
func TestAttackReadFindingWithAFenceInItsBody(t *testing.T) {
	answer := "Review.\n\n```json\n" + `{"verdict":"needs_changes","summary":"s","findings":[
 {"title":"off by one","body":"write it as:\n` + "```go" + `\nfor i := 0; i < n; i++ {\n` + "```" + `","priority":0,"confidence":0.9,"file":"loop.go","line_start":5,"line_end":5}
]}` + "\n```\n"
	r := Read(answer, scope, "/ws")
	if r.Verdict != VerdictNeedsChanges || len(r.Findings) != 1 {
		t.Errorf("an answer whose finding quotes a fenced fix: verdict %q, %d findings, error %q", r.Verdict, len(r.Findings), r.Error)
	}
}

// The prompt names every path left out, with no bound: a scope whose deny
// path holds many files makes a prompt far past the diff's 160 KiB, the
// project's 32 KiB and the instructions' 16 KiB together.
func TestAttackPromptLeftOutHasNoBound(t *testing.T) {
	s := scope
	s.LeftOut = nil
	for i := range 20000 {
		s.LeftOut = append(s.LeftOut, fmt.Sprintf("data/private/records/%06d.json", i))
	}
	p := Prompt(Request{Scope: s.Spec}, s)
	if bound := MaxPromptDiff + MaxProjectBytes + MaxInstructionBytes + 16<<10; len(p) > bound {
		t.Errorf("the prompt is %d KiB, past %d KiB, for %d paths left out", len(p)>>10, bound>>10, len(s.LeftOut))
	}
	if !strings.Contains(p, "data/private/records/000000.json") {
		t.Errorf("the prompt does not name what was left out")
	}
}

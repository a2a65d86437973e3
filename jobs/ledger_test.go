package jobs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// A ledger line longer than a verdict can be is skipped, and the verdicts
// after it in the same read still come through.
func TestLedgerReaderSkipsAnOverlongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	long := `{"tool_use_id":"` + strings.Repeat("f", 2*maxLedgerLine) + `","verdict":"allowed_by_rule"}`
	real := `{"tool_use_id":"toolu_real","tool":"Read","verdict":"allowed_by_rule"}`
	if err := os.WriteFile(path, []byte(long+"\n"+real+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := (&ledgerReader{path: path}).next()
	if len(got) != 1 || got[0].ToolUseID != "toolu_real" {
		t.Fatalf("verdicts %d: %+v", len(got), got)
	}
}

// Verdicts under made-up ids, more than a job may hold, do not crowd out a
// real call's verdict written after them, and a second line for a call does
// not rewrite its first.
func TestForgedVerdictsCannotCrowdOutTheRealOne(t *testing.T) {
	p := progress{verdicts: map[string]policy.Verdict{}}
	for i := range 3 * maxPendingVerdicts {
		p.addVerdict(policy.Verdict{ToolUseID: fmt.Sprintf("made-up-%d", i), Verdict: policy.AllowedByRule})
	}
	p.addVerdict(policy.Verdict{ToolUseID: "toolu_real", Verdict: policy.AllowedByHuman})
	p.addVerdict(policy.Verdict{ToolUseID: "toolu_real", Verdict: policy.AllowedByRule})
	for i := range maxPendingVerdicts {
		p.addVerdict(policy.Verdict{ToolUseID: fmt.Sprintf("later-%d", i/2), Verdict: policy.AllowedByRule})
		if i == 10 {
			break
		}
	}
	if v, ok := p.verdicts["toolu_real"]; !ok || v.Verdict != policy.AllowedByHuman {
		t.Fatalf("the real verdict: %+v %v", v, ok)
	}
	if len(p.verdicts) > maxPendingVerdicts || len(p.verdictQ) > 2*maxPendingVerdicts+1 {
		t.Errorf("%d verdicts, %d ids queued", len(p.verdicts), len(p.verdictQ))
	}
}

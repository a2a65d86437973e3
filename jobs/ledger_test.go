package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

package approvals

import (
	"os"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// A line longer than a record can be (written by something else than
// AppendAudit) is one unreadable record; the records after it still read.
func TestReadAuditSkipsAnOverlongLine(t *testing.T) {
	dir := statedir.Dir{Root: t.TempDir()}
	long := `{"event":"request","summary":"` + strings.Repeat("A", 2*maxAuditLine) + `"}`
	if err := os.WriteFile(dir.AuditLog(), []byte(long+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AppendAudit(dir, AuditRecord{Event: EventAuto, JobID: "job-1", Summary: "after"}); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAudit(dir, true)
	if err != nil || len(recs) != 2 || recs[0].Event != EventUnreadable || recs[1].Summary != "after" {
		t.Fatalf("ReadAudit: %v, %d records: %+v", err, len(recs), recs)
	}
	if len(recs[0].Reason) > 4<<10 {
		t.Errorf("the unreadable record carries %d bytes of the line", len(recs[0].Reason))
	}
}

// DisplayInput bounds a whole record, not only each string: an input of
// 200,000 short strings is cut and marked.
func TestDisplayInputBoundsTheWholeInput(t *testing.T) {
	tiny := make([]any, 200_000)
	for i := range tiny {
		tiny[i] = "ab"
	}
	out := DisplayInput(map[string]any{"todos": tiny, "other": strings.Repeat("x", 10)})
	if out["_clipped"] != true {
		t.Errorf("not marked clipped")
	}
	if l, _ := out["todos"].([]any); len(l) > maxShownValues {
		t.Errorf("%d values kept", len(l))
	}
}

package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/fulldisk"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func fullQueue(t *testing.T) (*Queue, statedir.Dir, *fulldisk.FS) {
	t.Helper()
	fs := fulldisk.Mount(t, 256<<10)
	dir, err := statedir.Open(filepath.Join(fs.Dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	return NewQueue(dir, zerolog.Nop()), dir, fs
}

// A record that cannot be written leaves a mark that says so; the first
// record written once space is back is preceded by one naming the gap.
func TestAuditGapIsMarkedThenRecorded(t *testing.T) {
	_, dir, fs := fullQueue(t)
	fs.Fill()
	err := AppendAudit(dir, AuditRecord{Event: EventRequest, JobID: "job1", Tool: "Bash", Summary: "Bash: ls"})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("AppendAudit on a full disk = %v, want ENOSPC", err)
	}
	u, ok := AuditUnwritten(dir)
	if !ok || u.Last.IsZero() {
		t.Fatalf("no mark after a failed write: %+v %v", u, ok)
	}
	if !strings.Contains(u.Text(), "audit records could not be written") || !strings.Contains(u.Text(), "was denied") {
		t.Errorf("mark text = %q", u.Text())
	}
	if b, _ := os.ReadFile(dir.AuditLog()); len(b) != 0 {
		t.Fatalf("the failed record left %q in the log", b)
	}

	fs.Free()
	if err := AppendAudit(dir, AuditRecord{Event: EventRequest, JobID: "job1", Tool: "Bash", Summary: "Bash: pwd"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := AuditUnwritten(dir); ok {
		t.Error("the mark stays after the gap was recorded")
	}
	recs, err := ReadAudit(dir, true)
	if err != nil || len(recs) != 2 {
		t.Fatalf("log = %+v, %v; want the gap and the record", recs, err)
	}
	if recs[0].Event != EventUnwritten || !strings.Contains(recs[0].Reason, "could not be written") || recs[1].Summary != "Bash: pwd" {
		t.Errorf("log = %+v", recs)
	}
}

// A request whose pending record cannot be written is denied at once and
// never reaches a human.
func TestSubmitOnAFullDiskDeniesWithoutQueueing(t *testing.T) {
	q, dir, fs := fullQueue(t)
	fs.Fill()
	d, err := q.Submit(t.Context(), "job1", chained, chainedVerdict(), time.Hour)
	if err == nil || d.Approved || !strings.Contains(d.Message(), "could not write the audit record") {
		t.Fatalf("Submit = %+v, %v; want a denial saying the record could not be written", d, err)
	}
	if open, _ := q.PendingForJob("job1"); len(open) != 0 {
		t.Errorf("a request was queued without its record: %+v", open)
	}
	if _, ok := AuditUnwritten(dir); !ok {
		t.Error("no mark")
	}
}

// A human's decision takes effect only once it is on record.
func TestDecideOnAReadOnlyStateDirDecidesNothing(t *testing.T) {
	q, dir, fs := fullQueue(t)
	id, _ := ids.New()
	now := time.Now().UTC()
	pr := PendingRequest{Version: statedir.FormatVersion, ID: id, JobID: "job1", Tool: "Bash", Summary: "Bash: make && make install", Created: now, Expires: now.Add(time.Hour)}
	if err := statedir.WriteJSON(q.requestPath(id), pr); err != nil {
		t.Fatal(err)
	}
	fs.ReadOnly(true)
	err := q.Decide(id, true, "", "owner")
	if err == nil || !strings.Contains(err.Error(), "nothing was decided") {
		t.Fatalf("Decide on a read-only state dir = %v", err)
	}
	if _, found, _ := q.readDecision(id); found {
		t.Fatal("a decision file exists without its record")
	}
	fs.ReadOnly(false)
	if err := q.Decide(id, true, "", "owner"); err != nil {
		t.Fatal(err)
	}
	d, found, err := q.readDecision(id)
	if !found || err != nil || !d.Approved {
		t.Fatalf("decision = %+v %v %v", d, found, err)
	}
	recs, _ := ReadAudit(dir, true)
	last := recs[len(recs)-1]
	if last.Event != EventHuman || last.Decision != rules.Allow || last.ID != id {
		t.Errorf("last record = %+v", last)
	}
}

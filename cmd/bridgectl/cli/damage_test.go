package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// `bridgectl audit` says plainly which lines are not whole records and
// what they still say, and that records could not be written at all;
// status says the latter too.
func TestAuditAndStatusSayWhatIsDamaged(t *testing.T) {
	te := newTestEnv(t)
	dir, err := statedir.Open(te.state)
	if err != nil {
		t.Fatal(err)
	}
	if err := approvals.AppendAudit(dir, approvals.AuditRecord{Event: approvals.EventRequest, JobID: strings.Repeat("a", 32), Tool: "Bash", Summary: "Bash: ls"}); err != nil {
		t.Fatal(err)
	}
	torn := `{"time":"2026-05-01T10:00:00Z","event":"auto","job_id":"` + strings.Repeat("b", 32) + `","tool":"Bash","summary":"Bash: make test","inp`
	f, _ := os.OpenFile(dir.AuditLog(), os.O_WRONLY|os.O_APPEND, 0o600)
	f.WriteString(torn) // as an older writer left it: cut short, no newline
	f.Close()
	if err := approvals.AppendAudit(dir, approvals.AuditRecord{Event: approvals.EventRequest, JobID: strings.Repeat("a", 32), Tool: "Read", Summary: "Read: go.mod"}); err != nil {
		t.Fatal(err)
	}
	// A write that failed since: the mark the approval child leaves.
	os.WriteFile(dir.AuditUnwritten(), []byte(`{"since":"2026-05-01T11:00:00Z","error":"no space left on device"}`), 0o600)

	out := te.must("audit")
	for _, want := range []string{
		"request      job aaaaaaaaaaaa — Bash: ls",
		time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Local().Format("2006-01-02 15:04:05") + "  unreadable   job bbbbbbbbbbbb — Bash: make test (line 2 is not a whole record (136 bytes; its event: auto): ",
		"Read: go.mod",
		"DAMAGED: 1 line of " + dir.AuditLog() + " is not a whole record",
		"NOT RECORDED: audit records could not be written from 2026-05-01",
		"(no space left on device); every tool call they would have recorded was denied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	out = te.must("status")
	if !strings.Contains(out, "AUDIT:     audit records could not be written from 2026-05-01") || !strings.Contains(out, "was denied — free space in the state dir") {
		t.Errorf("status does not say records were not written:\n%s", out)
	}
	var r statusReport
	if err := json.Unmarshal([]byte(te.must("status", "--json")), &r); err != nil || !strings.Contains(r.AuditUnwritten, "no space left on device") {
		t.Errorf("status --json audit_unwritten = %q, %v", r.AuditUnwritten, err)
	}
}

// `bridgectl jobs` lists a cut-short snapshot and a set-aside one plainly,
// with what is still known, and `jobs ID` shows each.
func TestJobsSayWhatIsDamaged(t *testing.T) {
	te := newTestEnv(t)
	good := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: strings.Repeat("1", 32), Status: jobs.StatusDone, Task: "fine", CreatedAt: time.Now().UTC(), MaxSteps: 5}
	dir := te.writeJobs(good)
	cut := strings.Repeat("2", 32)
	os.WriteFile(dir.JobFile(cut), []byte(`{"version":1,"id":"`+cut+`","status":"running","task":"fix the build","created_at":"2026-05-01T10:00:00Z","max_steps":50,"steps":33,"last_tool":"Bash: mak`), 0o600)
	aside := strings.Repeat("3", 32)
	os.MkdirAll(jobs.SetAsideDir(dir), 0o700)
	os.WriteFile(filepath.Join(jobs.SetAsideDir(dir), aside+".json"), []byte(`{"version":1,"id":"`+aside+`","status":"archived","nonce":"n","result":"r"}`), 0o600)

	out := te.must("jobs")
	for _, want := range []string{
		good.ID + "  done",
		cut + "  DAMAGED          " + dir.JobFile(cut) + " does not parse (unexpected end of JSON input) — still known: status running; 33 steps; created 2026-05-01T10:00:00Z; task: fix the build (how it ended is not known)",
		aside + "  SET ASIDE        status \"archived\" is unknown to this build: kept unchanged in " + filepath.Join(jobs.SetAsideDir(dir), aside+".json") + " (with its result and nonce)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs lacks %q:\n%s", want, out)
		}
	}
	for id, want := range map[string]string{cut: "status:     DAMAGED — ", aside: "status:     SET ASIDE — "} {
		out, errs, code := te.run("jobs", id)
		if code != 1 || !strings.Contains(out, want) || !strings.Contains(errs, "cannot be shown as a job") {
			t.Errorf("jobs %s: exit %d\n%s\n%s", id, code, out, errs)
		}
	}
	if out := te.must("status"); !strings.Contains(out, "2 job snapshots cannot be read as jobs (damaged or set aside)") {
		t.Errorf("status:\n%s", out)
	}
}

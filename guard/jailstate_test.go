package guard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// A shell at the jail's level (outside Claude Code's own sandbox, where a
// redirected file-tool write or a filter git runs for Claude Code would
// land: an attack review raced a link swap with 110 Writes and landed files
// in the approval queue) finds nothing of the state dir but its own
// harness dir: neither the approval queue, nor the audit log, the ledgers
// or the switches. Its writes toward them land nowhere on the host. Before
// the approval service, the jail bound the queue and the audit log
// read-write and the switches read-only, and this test failed on each.
func TestJailHoldsNoApprovalQueueAuditLogLedgerOrSwitch(t *testing.T) {
	f := newJailFixture(t)
	ws := filepath.Join(f.root, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	admitted, err := f.g.Admit(ws)
	if err != nil {
		t.Fatal(err)
	}
	// What exists on the host before the job: a queue with a request in
	// it, the audit log, the switches, another job's ledger.
	for _, d := range []string{f.dir.Approvals(), f.dir.Switches(), f.dir.LedgerDir("other")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := approvals.AppendAudit(f.dir, approvals.AuditRecord{Event: approvals.EventRequest, JobID: "other"}); err != nil {
		t.Fatal(err)
	}
	req := filepath.Join(f.dir.Approvals(), "0123456789abcdef0123456789abcdef.request.json")
	if err := os.WriteFile(req, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditBefore, err := os.ReadFile(f.dir.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("d", 32)
	spec := harness.Spec{JobID: id, Workspace: admitted, ConfigDir: f.dir.HarnessDir(id)}
	if err := f.g.Prepare(context.Background(), &spec); err != nil {
		t.Fatal(err)
	}
	defer spec.CloseWrapFiles()
	// The last: the queue through the root of this process, the daemon's
	// stand-in, in the host's /proc; the jail has its own.
	targets := []string{f.dir.Approvals(), f.dir.AuditLog(), f.dir.Switches(), f.dir.LedgerRoot(), f.dir.LedgerFile(id), req,
		filepath.Join(spec.ConfigDir, "..", "..", "approvals"), fmt.Sprintf("/proc/%d/root%s", os.Getpid(), f.dir.Approvals())}
	var probe strings.Builder
	for _, p := range targets {
		probe.WriteString(`if [ -e "` + p + `" ]; then echo "VISIBLE ` + p + `"; else echo "ABSENT ` + p + `"; fi; `)
	}
	// Writes toward them: a forged decision, the approval-off flag, a line
	// in the audit log and in the job's own ledger.
	decision := filepath.Join(f.dir.Approvals(), "0123456789abcdef0123456789abcdef.decision.json")
	probe.WriteString(`echo '{"approved":true}' > "` + decision + `" 2>/dev/null; `)
	probe.WriteString(`echo off > "` + f.dir.ApprovalOffFlag() + `" 2>/dev/null; `)
	probe.WriteString(`echo '{"event":"human"}' >> "` + f.dir.AuditLog() + `" 2>/dev/null; `)
	probe.WriteString(`echo '{"verdict":"allowed_by_human"}' >> "` + f.dir.LedgerFile(id) + `" 2>/dev/null; `)
	probe.WriteString(`echo "PIDS $(ls /proc | grep -c '^[0-9]')"; echo PROBE-DONE`)
	cmd := exec.Command(spec.Wrap[0], append(spec.Wrap[1:], "/bin/sh", "-c", probe.String())...)
	cmd.ExtraFiles = spec.WrapFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	spec.WrapAttr(cmd.SysProcAttr) // the job's own PID namespace
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "PROBE-DONE") {
		t.Fatalf("the probe did not run in the jail (%v): %s", err, out)
	}
	for _, p := range targets {
		if !strings.Contains(string(out), "ABSENT "+p) {
			t.Errorf("the jail shows %s:\n%s", p, out)
		}
	}
	for _, p := range []string{decision, f.dir.ApprovalOffFlag(), f.dir.LedgerFile(id)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the jail's write landed in %s on the host", p)
		}
	}
	// bubblewrap's init, the shell and its ls: the jail's own processes.
	if m := regexp.MustCompile(`PIDS (\d+)`).FindStringSubmatch(string(out)); m == nil || len(m[1]) > 1 {
		t.Errorf("the jail's /proc is not its own PID namespace's:\n%s", out)
	}
	if after, _ := os.ReadFile(f.dir.AuditLog()); string(after) != string(auditBefore) {
		t.Errorf("the jail's write changed the audit log:\n%s", after)
	}
	t.Logf("inside the jail:\n%s", out)
}

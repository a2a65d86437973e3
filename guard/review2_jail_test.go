package guard

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// Inside a job's jail, outside Claude Code's own nested sandbox, runs
// Claude Code itself: its file tools write there, and a write a job
// redirects with a symlink swapped in after the rules' check (SECURITY.md,
// "File tools race symlinks") lands with exactly the access this view
// grants. The view keeps the approval-off flag out of reach; it must keep
// the audit log to appends, and the audit-unwritten mark to the approval
// child. Here a shell in the jail — standing in for such a redirected
// write — truncates the audit log, forges a record in it and plants the
// mark. The earlier records of every job and of the daemon must survive.
func TestReview2JailedHarnessCannotRewriteTheAuditLog(t *testing.T) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap not installed:", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := newGuardFixture(t, nil, nil)
	f.g.bwrap, f.g.exe = bw, exe
	ws := f.workspace(t)
	id := strings.Repeat("c", 32)
	spec := harness.Spec{JobID: id, Workspace: ws, ConfigDir: f.dir.HarnessDir(id)}
	if err := f.g.Prepare(context.Background(), &spec); err != nil {
		t.Fatal(err)
	}
	// A record of another job, before this one ran.
	if err := approvals.AppendAudit(f.dir, approvals.AuditRecord{Event: approvals.EventHuman, JobID: strings.Repeat("d", 32), Summary: "Bash: rm -rf build", Decision: "allow", By: "owner"}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(f.dir.AuditLog())
	if err != nil || len(before) == 0 {
		t.Fatalf("audit log before: %q %v", before, err)
	}
	forged := `{"time":"2026-01-01T00:00:00Z","event":"human","job_id":"` + id + `","decision":"deny","by":"owner"}`
	run := func(script string) (string, error) {
		cmd := exec.Command(spec.Wrap[0], append(spec.Wrap[1:], "/bin/sh", "-c", script)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// What held: the switches are read-only in the jail.
	if out, err := run("echo on > " + f.dir.ApprovalOffFlag()); err == nil {
		t.Errorf("the approval-off flag was writable in the jail: %s", out)
	}
	if approvals.ApprovalOff(f.dir) {
		t.Errorf("the approval-off flag exists after the jailed write")
	}

	out, err := run("printf '%s\\n' '" + forged + "' > " + f.dir.AuditLog() + "; echo '{}' > " + f.dir.AuditUnwritten() + "; echo '{}' > " + filepath.Join(f.dir.Approvals(), "forged.request.json"))
	t.Logf("the jailed writes: %v %s", err, out)
	after, rerr := os.ReadFile(f.dir.AuditLog())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.HasPrefix(after, before) {
		t.Errorf("a process in the job's jail rewrote the audit log: before %q, after %q", before, after)
	}
	if bytes.Contains(after, []byte(forged)) {
		t.Errorf("a process in the job's jail forged an audit record: %q", after)
	}
	if _, err := os.Lstat(f.dir.AuditUnwritten()); err == nil {
		t.Errorf("a process in the job's jail planted %s", f.dir.AuditUnwritten())
	}
	if _, err := os.Lstat(filepath.Join(f.dir.Approvals(), "forged.request.json")); err == nil {
		t.Errorf("a process in the job's jail planted a request")
	}
}

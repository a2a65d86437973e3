package guard

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A daemon that is not root starts its jails too: its wrapper makes a user
// namespace of its own in which it may mount the job's /proc (bubblewrap
// could not: it gives the command capabilities only in a namespace that
// does not own the jail's). Run as root, this test runs the jail test again
// as uid 65534, the way an owner's daemon runs.
func TestJailStartsForADaemonThatIsNotRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: every jail test here already runs as an ordinary user")
	}
	newJailFixture(t) // skips without bubblewrap
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv to run the test as another user")
	}
	dir, err := os.MkdirTemp("", "jail-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "guard.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"-test.run", "^TestJailHoldsNoApprovalQueueAuditLogLedgerOrSwitch$", "-test.v", "-test.count=1")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestJailHoldsNoApprovalQueueAuditLogLedgerOrSwitch") {
		t.Fatalf("the jail test as uid 65534 (%v):\n%s", err, out)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

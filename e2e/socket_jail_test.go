package e2e

// The daemon's unix socket serves every tool without the path secret, so a
// job that reached it could start jobs and approve nothing less than its own
// escape. It lives in the state dir, which the job's jail does not mount.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// socketProbe says, per path, whether the file is there (VISIBLE or
// ABSENT) and whether it connected to it as a unix socket and got the
// daemon's /health answer (CONNECTED or REFUSED).
func socketProbe(paths ...string) string {
	return `for p in ` + strings.Join(paths, " ") + `; do ` +
		`if [ -e $p ]; then echo "VISIBLE $p"; else echo "ABSENT $p"; fi; ` +
		`if out=$(printf 'GET /health HTTP/1.0\r\n\r\n' | socat -T5 - UNIX-CONNECT:$p 2>&1) && echo "$out" | grep -q '"status":"ok"'; ` +
		`then echo "CONNECTED $p"; else echo "REFUSED $p: $(echo "$out" | head -c 200)"; fi; done; echo PROBE-DONE`
}

// A job's command (sandbox on, no human: the guards alone) does not see the
// daemon's socket — the jail does not mount the state dir — and cannot
// connect to it, neither by its path nor through the daemon's /proc entries
// (Claude Code's own sandbox also refuses the command a unix socket: a
// second layer). The same probe run outside the jail sees and connects.
func TestJobCannotReachTheDaemonSocket(t *testing.T) {
	t.Parallel()
	g := startCarelessBridge(t, "off", nil)
	sock := filepath.Join(g.StateDir(), "daemon.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("daemon socket %s: %v (%v), want a socket with mode 0600", sock, fi.Mode(), err)
	}
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(filepath.Join(g.StateDir(), "daemon.json"), &info); err != nil || info.PID == 0 {
		t.Fatalf("daemon.json: %v", err)
	}
	pid := strconv.Itoa(info.PID)
	paths := []string{sock, "/proc/" + pid + "/root" + sock, "/proc/" + pid + "/cwd/../state/daemon.sock"}
	probe := socketProbe(paths...)

	// The control: outside the jail the probe reaches the daemon.
	out, err := exec.Command("sh", "-c", socketProbe(sock)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CONNECTED "+sock) || !strings.Contains(string(out), "VISIBLE "+sock) {
		t.Fatalf("the probe does not reach the socket even outside a job (%v):\n%s", err, out)
	}

	g.d.ScriptAnthropic(dt.ToolCalls(bash(probe)), dt.Text("probed"))
	cs := goSDKClient(t, g.URL())
	c := startJob(t, cs, "Probe the daemon's socket.", g.workspace(t, nil))
	c = waitSettled(t, cs, c.P.JobID, jobLimit)
	if c.P.Status != string(jobs.StatusDone) {
		t.Fatalf("job: %s: %s", c.P.Status, c.Text)
	}
	results := strings.Join(g.d.LastToolResultTexts(dt.SideAnthropic), "\n")
	if !strings.Contains(results, "PROBE-DONE") {
		t.Fatalf("the probe did not run in the job:\n%s", results)
	}
	for _, p := range paths {
		if strings.Contains(results, "CONNECTED "+p) || !strings.Contains(results, "REFUSED "+p) || !strings.Contains(results, "ABSENT "+p) {
			t.Errorf("inside the job, %s:\n%s", p, results)
		}
	}
	t.Logf("inside the job:\n%s", results)
}

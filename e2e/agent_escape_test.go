package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// With BRIDGE_SANDBOX=off a command can leave its job's process group
// (setsid) and drop the job's marker (env -i); neither the group kill nor
// the marker scan finds it. The daemon is a child subreaper, so the escapee
// is re-parented to it once its shell exits, and a cancel kills it.
func TestAgentSandboxOffEscapeeDiesWithTheJob(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SANDBOX": "off"})
	a.approveEverything(t)
	escape := `setsid env -i /bin/sh -c 'echo $$ > escapee.tmp && mv escapee.tmp escapee.pid && exec /bin/sleep 300' </dev/null >/dev/null 2>&1 &`
	cs := goSDKClient(t, a.URL())
	id, ws := a.startTailJob(t, cs, dt.ToolCalls(dt.Call("Bash", map[string]any{"command": escape, "description": "escape"})))
	pidFile := filepath.Join(ws, "escapee.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the escapee did not start: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("escapee pid %q", b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !sleeping(pid) {
		t.Fatalf("escapee %d is not running", pid)
	}
	env, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if strings.Contains(string(env), "BRIDGE_JOB_ID") {
		t.Fatalf("the escapee kept the job marker; the case proves nothing")
	}
	snap, err := jobs.Load(a.dir(), id)
	if err != nil {
		t.Fatal(err)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid == snap.HarnessPID {
		t.Fatalf("the escapee stayed in the harness's group")
	}
	c := callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil)
	if c.P.Status != string(jobs.StatusCancelled) {
		t.Fatalf("cancel = %s: %s", c.P.Status, c.Text)
	}
	if !poll.Until(5*time.Second, func() bool { return !sleeping(pid) }) {
		t.Fatalf("escapee %d survived the cancel", pid)
	}
}

// sleeping: pid is a live (not zombie) sleep — not a recycled pid.
func sleeping(pid int) bool {
	d := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	stat, _ := os.ReadFile(filepath.Join(d, "stat"))
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	return filepath.Base(argv0) == "sleep"
}

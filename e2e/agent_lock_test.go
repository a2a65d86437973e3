package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A second `bridge serve` on the same state dir is refused before it touches
// the state: it exits non-zero naming the live daemon's pid, and the live
// daemon's running job and its processes are untouched.
func TestAgentSecondServeRefused(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	cs := goSDKClient(t, a.URL())
	id, _ := a.startTailJob(t, cs)
	before := harness.JobProcesses(id)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, a.bin, "serve")
	second.Dir = t.TempDir()
	env := a.Env()
	env["BRIDGE_LOG_FILE"] = filepath.Join(t.TempDir(), "second.log") // the live daemon's log is not ours to write
	for k, v := range env {
		second.Env = append(second.Env, k+"="+v)
	}
	second.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	second.Cancel = func() error { return syscall.Kill(-second.Process.Pid, syscall.SIGKILL) }
	out, err := second.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("second serve: err %v, want a non-zero exit; output:\n%s", err, out)
	}
	want := "another bridge serve (pid " + strconv.Itoa(a.PID()) + ") is using BRIDGE_STATE_DIR=" + a.StateDir() + "; stop it with `bridgectl stop`"
	if !strings.Contains(string(out), want) {
		t.Errorf("second serve said:\n%s\nwant it to contain %q", out, want)
	}

	// The first daemon's job is still running, with the same processes.
	c := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	if c.IsError || c.P.Status != string(jobs.StatusRunning) {
		t.Fatalf("after the second serve the job is %s: %s", c.P.Status, c.Text)
	}
	for _, pid := range before {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("job process %d is gone after the second serve: %v", pid, err)
		}
	}
	if s := assertSnapshotFile(t, a.dir(), id, jobs.StatusRunning); s.Error != "" {
		t.Errorf("snapshot error %q", s.Error)
	}
	if _, err := os.Stat(a.dir().ApprovalOffFlag()); err == nil {
		t.Errorf("the approval-off flag appeared")
	}
	c = callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil)
	if c.P.Status != string(jobs.StatusCancelled) {
		t.Errorf("cancel = %s: %s", c.P.Status, c.Text)
	}
}

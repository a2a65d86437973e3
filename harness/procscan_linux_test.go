//go:build linux

package harness

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// A job's end reads its own tree, not the machine's: a marked process that
// left its group (setsid) is below this process and is found and killed
// there; one not marked is left alone.
func TestJobEndKillsItsDescendantsOnly(t *testing.T) {
	if !childrenListed() {
		t.Skip("the kernel lists no children (CONFIG_PROC_CHILDREN)")
	}
	start := func(job string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "setsid sleep 300 & echo $!; wait")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BRIDGE_JOB_ID=" + job}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		b := make([]byte, 32)
		n, _ := out.Read(b)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
		if err != nil {
			t.Fatalf("child pid %q: %v", b[:n], err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return cmd
	}
	mine, other := start("job-end-mine"), start("job-end-other")
	if !poll.Until(5*time.Second, func() bool { return len(JobProcesses("job-end-mine")) >= 2 }) {
		t.Fatalf("the job's processes: %v", JobProcesses("job-end-mine"))
	}
	below, ok := descendants()
	if !ok || !slices.Contains(below, mine.Process.Pid) || !slices.Contains(below, other.Process.Pid) {
		t.Fatalf("descendants %v (ok %v) lack the test's children %d, %d", below, ok, mine.Process.Pid, other.Process.Pid)
	}
	if n := killJobDescendants("job-end-mine"); n < 2 {
		t.Errorf("killJobDescendants killed %d, want the shell and its setsid sleep", n)
	}
	if !poll.Until(5*time.Second, func() bool { return len(JobProcesses("job-end-mine")) == 0 }) {
		t.Errorf("left of the job: %v", JobProcesses("job-end-mine"))
	}
	if len(JobProcesses("job-end-other")) < 2 {
		t.Errorf("another job's processes were killed: %v", JobProcesses("job-end-other"))
	}
}

// What a job's end costs the daemon: reading every process of the machine
// for the job's marker, against reading its own tree.
func BenchmarkJobEndScan(b *testing.B) {
	b.Run("machine", func(b *testing.B) {
		for b.Loop() {
			_ = JobProcesses("no-such-job")
		}
	})
	b.Run("own tree", func(b *testing.B) {
		for b.Loop() {
			pids, _ := descendants()
			_ = marked("no-such-job", pids)
		}
	})
}

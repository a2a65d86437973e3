//go:build linux

package harness

import (
	"bufio"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startNamespacedJob starts a shell as the first process of a new PID and
// mount namespace, the way the jail's first process is. The shell makes its
// mounts private, mounts the namespace's own /proc, starts three children
// (the job's processes), and then takes that /proc away again from its own
// mount namespace: what a job that gets hold of the first process (the
// jail's monitor, pid 1 of the namespace, which the jail shows it in /proc)
// can make happen. From then on /proc/<first pid>/root/proc is not the
// namespace's /proc, though every process of the job still lives. It
// returns once that state is reached.
func startNamespacedJob(t *testing.T) *exec.Cmd {
	t.Helper()
	script := `mount --make-rprivate / && mount -t proc proc /proc || exit 1
sleep 60 & sleep 60 & sleep 60 &
umount -l /proc || exit 1
echo ready
wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	if os.Getuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		cmd.SysProcAttr.GidMappingsEnableSetgroups = false
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no PID and mount namespace here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Skipf("could not set up the namespace (mount/umount refused?): %q %v", line, err)
	}
	return cmd
}

// The first process here is a shell that forks; the daemon's never does
// before it execs the jail (firstAlone). So the watcher is told it was
// started from another file (/bin/true): the shell stands for that first
// process after its exec, when a job could act.
const startedElsewhere = "/bin/true"

// execdRun is w as the watcher has it for a run started from
// startedElsewhere.
func execdRun(t *testing.T, root int) *watched {
	t.Helper()
	w := &watched{root: root, jailProc: "/proc/" + strconv.Itoa(root) + "/root/proc"}
	var st syscall.Stat_t
	if err := syscall.Stat(startedElsewhere, &st); err != nil {
		t.Fatal(err)
	}
	w.started.dev, w.started.ino, w.started.ok = st.Dev, st.Ino, true
	return w
}

// After the job's own /proc was mounted, a job that makes it unreachable
// through its first process (ownProc fails) must still be counted whole: it
// runs four processes against a bound of two. Before the change the
// machine's tree below the first process was read, and the bound held; now
// the watcher counts the first process alone (rootOnly) and the job runs
// on unbounded.
func TestAttackJobHidesItsProcessesByUndoingItsOwnProc(t *testing.T) {
	cmd := startNamespacedJob(t)
	root := cmd.Process.Pid
	w := execdRun(t, root)
	if own := w.ownProc(hostProcDev(t)); own != "" {
		t.Skipf("the job's /proc is still reachable at %s", own)
	}
	breached := make(chan Breach, 1)
	stop := watchLimits(root, startedElsewhere, Limits{Processes: 2}, true, func(b Breach) { breached <- b })
	defer stop()
	select {
	case b := <-breached:
		if b.Bound != BoundProcesses {
			t.Fatalf("breach %+v, want the process bound", b)
		}
	case <-time.After(10 * limitTick):
		t.Fatalf("a job of four processes (the first and three children) ran %v past a bound of 2 unseen: its first process's /proc no longer shows them, and the watcher counted that process alone", 10*limitTick)
	}
}

// The same for what the disk and memory watcher reads: the files the job's
// processes hold open (deleted files, memory files) and their tmpfs mounts
// are looked for only in the processes jobPIDs returns. With the job's own
// /proc unreachable, jobPIDs returns the first process alone, so a child
// holding a deleted file or a memfd escapes the disk and memory bounds.
func TestAttackJobPIDsMissChildrenOnceOwnProcIsUndone(t *testing.T) {
	cmd := startNamespacedJob(t)
	root := cmd.Process.Pid
	w := execdRun(t, root)
	if own := w.ownProc(hostProcDev(t)); own != "" {
		t.Skipf("the job's /proc is still reachable at %s", own)
	}
	procRoot, pids := w.jobPIDs()
	sort.Ints(pids)
	if len(pids) < 4 {
		t.Fatalf("jobPIDs = %s %v: the job runs 4 processes (the first, %d, and three children), the held-file watcher looks at %d", procRoot, pids, root, len(pids))
	}
}

func hostProcDev(t *testing.T) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc", &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

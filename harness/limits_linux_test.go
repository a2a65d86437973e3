//go:build linux

package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A run past one of its own bounds is killed, its whole tree, and its Exit
// names the bound: a tree forking without end, one allocating without end,
// one filling its disk. Each would run until the test's deadline otherwise.
func TestRunPastItsLimitIsKilledWithItsTree(t *testing.T) {
	disk := t.TempDir()
	cases := []struct {
		name   string
		body   string
		limits Limits
		bound  string
	}{
		{"forks", "while :; do sleep 300 & done", Limits{Processes: 64}, BoundProcesses},
		{"allocates", `python3 -c '
a = []
while True:
    a.append(b"x" * (16 << 20))
'`, Limits{Memory: 256 << 20}, BoundMemory},
		{"fills its disk", "sleep 300 & while :; do head -c 1048576 /dev/zero >> " + filepath.Join(disk, "fill") + "; done", Limits{Disk: 64 << 20, DiskPaths: []string{disk}}, BoundDisk},
		// What the job deletes but keeps open is still its disk, and a
		// memory file its memory, though no walk or RSS shows them.
		{"fills a file it deleted", "exec 3>" + filepath.Join(disk, "gone") + "; rm " + filepath.Join(disk, "gone") + "; for i in $(seq 1 1024); do head -c 1048576 /dev/zero >&3; done; sleep 300", Limits{Disk: 64 << 20, DiskPaths: []string{disk}}, BoundDisk},
		{"fills a memory file", `python3 -c '
import os, time
fd = os.memfd_create("x")
for _ in range(64):
    os.write(fd, b"x" * (16 << 20))
time.sleep(300)
'`, Limits{Memory: 256 << 20, Disk: 1 << 40, DiskPaths: []string{disk}}, BoundMemory},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &ClaudeCode{Bin: fakeClaude(t, "echo '"+initLine+"'\n"+tc.body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
			spec := testSpec(t, "job-limit")
			spec.Limits = tc.limits
			r, err := c.Start(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			_, exit := collect(t, r, 60*time.Second)
			if exit.Limit == nil || exit.Limit.Bound != tc.bound || exit.Limit.Seen <= exit.Limit.Limit {
				t.Fatalf("exit %+v, limit %+v: want the %s bound passed", exit, exit.Limit, tc.bound)
			}
			if exit.Stopped {
				t.Errorf("a limit's kill is not a Stop: %+v", exit)
			}
			t.Logf("%s", exit.Limit.Text())
			assertTreeGone(t, spec.JobID)
		})
	}
}

// A bound of 0 holds nothing: a job writing past what would be a bound, in
// more files than a walk takes, ends on its own.
func TestZeroDiskBoundHoldsNothing(t *testing.T) {
	old := maxDiskEntries
	maxDiskEntries = 10
	t.Cleanup(func() { maxDiskEntries = old })
	disk := t.TempDir()
	body := "for i in $(seq 1 40); do head -c 65536 /dev/zero > " + disk + "/f$i; done; sleep 0.6\necho '" + initLine + "'\necho '" + resultLine + "'"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-nodisk")
	spec.Limits = Limits{Memory: 1 << 30, DiskPaths: []string{disk}}
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, exit := collect(t, r, 10*time.Second); exit.Limit != nil || exit.Code != 0 {
		t.Fatalf("exit %+v limit %+v", exit, exit.Limit)
	}
}

// A run within its bounds ends as it would without them, its Exit naming
// none.
func TestRunWithinItsLimitsEndsOnItsOwn(t *testing.T) {
	body := "sleep 0.5\necho '" + initLine + "'\necho '" + resultLine + "'\nexit 0"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-within")
	spec.Limits = Limits{Processes: 64, Memory: 1 << 30, Disk: 1 << 30, DiskPaths: []string{spec.ConfigDir}}
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 10*time.Second)
	if len(evs) != 2 || exit.Code != 0 || exit.Limit != nil {
		t.Fatalf("events %d exit %+v limit %+v", len(evs), exit, exit.Limit)
	}
}

// The disk walk counts blocks allocated, so a sparse file's size is not its
// use, and stops once past the bound.
func TestDiskWalkCountsAllocatedBlocks(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "full"), make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(d, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := diskWalk{limit: 64 << 20}
	w.walk(d)
	if w.over || w.used < 4<<20 || w.used > 8<<20 {
		t.Fatalf("used %d over %v: want about 4 MiB, not over", w.used, w.over)
	}
	w = diskWalk{limit: 1 << 20}
	if w.walk(d); !w.over {
		t.Fatal("4 MiB is not over a bound of 1 MiB")
	}
}

// Nothing hides a file from the walk: a path longer than PATH_MAX, a
// directory its owner may not read, a directory of more files than the
// walk takes.
func TestDiskWalkSeesWhatAJobHides(t *testing.T) {
	d := t.TempDir()
	deep := d
	for range 2100 / 2 { // each "a/" adds two bytes: 4200 > PATH_MAX
		deep = filepath.Join(deep, "a")
	}
	if err := os.MkdirAll(deep, 0o700); err != nil && !errors.Is(err, unix.ENAMETOOLONG) {
		t.Fatal(err)
	}
	// Create the deepest file from a descriptor near it: its full path is
	// too long for the kernel to take.
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2100 / 2 {
		if err := unix.Mkdirat(fd, "a", 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "a", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = next
	}
	ffd, err := unix.Openat(fd, "deep.bin", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(ffd, make([]byte, 8<<20)); err != nil {
		t.Fatal(err)
	}
	unix.Close(ffd)
	unix.Close(fd)
	hidden := filepath.Join(d, "hidden")
	if err := os.Mkdir(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "x.bin"), make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hidden, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(hidden, 0o700) })
	w := diskWalk{limit: 1 << 40}
	w.walk(d)
	if w.over || w.used < 16<<20 {
		t.Fatalf("used %d MiB (over %v %s): the deep file and the hidden one are 16 MiB", w.used>>20, w.over, w.why)
	}
	old := maxDiskEntries
	maxDiskEntries = 1000
	t.Cleanup(func() { maxDiskEntries = old })
	many := t.TempDir()
	for i := range 1001 {
		if err := os.WriteFile(filepath.Join(many, strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w = diskWalk{limit: 1 << 40}
	if w.walk(many); !w.over || !strings.Contains(w.why, "more than 1000 files") {
		t.Fatalf("1001 empty files: over %v (%s)", w.over, w.why)
	}
}

// The watcher's cost per tick: one read of the whole process table, for
// every job at once (make bench reports it with the rest).
func BenchmarkReadProcTable(b *testing.B) {
	n := 0
	for b.Loop() {
		n = len(readProcTable("/proc").procs)
	}
	b.ReportMetric(float64(n), "procs")
}

// fakeStat is a /proc/<pid>/stat line with the fields the watcher reads.
func fakeStat(pid, ppid, threads, rssPages int) string {
	return fmt.Sprintf("%d (a (b) c) S %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 %d 0 1000 4096 %d 0 0\n", pid, ppid, threads, rssPages)
}

// A run in its own PID namespace is counted from that namespace's /proc,
// every process in it being the job's, once its first process has mounted
// it; before, and for anything that is not a proc filesystem of its own,
// the watcher reads the machine's table.
func TestOwnPIDNamespaceIsCountedFromItsOwnProc(t *testing.T) {
	var host unix.Stat_t
	if err := unix.Stat("/proc", &host); err != nil {
		t.Fatal(err)
	}
	fake := t.TempDir()
	for _, p := range []string{"", "/proc", fake} {
		if got := (&watched{jailProc: p}).ownProc(host.Dev); got != "" {
			t.Errorf("%q taken for the job's own /proc", p)
		}
	}
	if os.Getuid() != 0 {
		t.Skip("a PID namespace without a user namespace needs root")
	}
	cmd := exec.Command("/bin/sh", "-c", "mount --make-rprivate / && mount -t proc proc /proc && echo ready && exec sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := io.ReadFull(out, make([]byte, 6)); err != nil {
		t.Fatalf("the namespace's first process did not mount its /proc: %v", err)
	}
	w := &watched{root: cmd.Process.Pid, jailProc: fmt.Sprintf("/proc/%d/root/proc", cmd.Process.Pid)}
	own := w.ownProc(host.Dev)
	if own != w.jailProc {
		t.Fatalf("own /proc %q, want %q", own, w.jailProc)
	}
	table := readProcTable(own)
	if len(table.procs) != 1 || table.procs[1].threads != 1 {
		t.Fatalf("the namespace's table %+v: want its one process, pid 1", table.procs)
	}
}

// checkAll counts every process of a table and stops once past a bound.
func TestCheckAllCountsEveryProcessOfTheTable(t *testing.T) {
	own := t.TempDir()
	for pid, line := range map[int]string{1: fakeStat(1, 0, 1, 10), 2: fakeStat(2, 1, 30, 10), 7: fakeStat(7, 2, 40, 10)} {
		if err := os.MkdirAll(filepath.Join(own, strconv.Itoa(pid)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(own, strconv.Itoa(pid), "stat"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var got []Breach
	w := &watched{limits: Limits{Processes: 64}, breach: func(b Breach) { got = append(got, b) }}
	checkAll(w, readProcTable(own))
	if len(got) != 1 || got[0].Bound != BoundProcesses || got[0].Seen <= 64 { // counting stops once past
		t.Fatalf("breaches %+v: want processes, more than 64 threads seen", got)
	}
	w = &watched{limits: Limits{Processes: 100, Memory: 29 * pageSize}, breach: func(b Breach) { got = append(got, b) }}
	checkAll(w, readProcTable(own))
	if len(got) != 2 || got[1].Bound != BoundMemory || got[1].Seen != 30*pageSize {
		t.Fatalf("breaches %+v: want memory, 30 pages seen", got)
	}
}

// A kill for a bound reaches the process the table saw, not one that took
// its pid since: its start time must still match.
func TestKillSparesAReusedPID(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var buf [1024]byte
	p, ok := readStat([]byte(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)), buf[:])
	if !ok {
		t.Fatal("no stat")
	}
	procRef{pid: cmd.Process.Pid, start: p.start + 1}.kill() // another process's start
	select {
	case err := <-done:
		t.Fatalf("the process with another start time was killed: %v", err)
	default:
	}
	procRef{pid: cmd.Process.Pid, start: p.start}.kill()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the process itself was not killed: %v", err)
	}
}

// A job's harness runs at a lower priority than the daemon, which its
// children inherit.
func TestHarnessRunsAtJobNice(t *testing.T) {
	c := &ClaudeCode{Bin: fakeClaude(t, "sleep 5"), Environ: []string{"PATH=" + os.Getenv("PATH")}, StopGrace: 100 * time.Millisecond}
	r, err := c.Start(t.Context(), testSpec(t, "job-nice"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); collect(t, r, 10*time.Second) }()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, r.PID())
	if err != nil {
		t.Fatal(err)
	}
	// The raw syscall's value is 20 - nice.
	if nice := 20 - prio; nice != jobNice {
		t.Fatalf("the harness runs at nice %d, want %d", nice, jobNice)
	}
}

// startedAs is a watched run in its own PID namespace whose first process
// is cmd, started from exe, with its /proc/<pid>/root/proc the machine's
// (not a /proc of its own, as far as the watcher can tell).
func startedAs(t *testing.T, cmd *exec.Cmd, exe string) *watched {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	root := cmd.Process.Pid
	w := &watched{root: root, jailProc: fmt.Sprintf("/proc/%d/root/proc", root)}
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	w.started.dev, w.started.ino, w.started.ok = st.Dev, st.Ino, true
	return w
}

// Before the first process of a job's PID namespace has exec'd the jail, it
// is the job's only one (it forks nothing first), so the watchers read its
// own entry, not the machine's table: a job's cost must not grow with the
// processes the machine runs (make bench: the bridge's CPU per job with
// 5,000 idle processes had been 2.5 times what it was without).
func TestAJobBeforeItsOwnProcIsItsFirstProcessAlone(t *testing.T) {
	w := startedAs(t, exec.Command("sleep", "30"), "/bin/sleep")
	if !w.firstAlone() {
		t.Fatal("a first process still running the file it was started from is not taken as alone")
	}
	procRoot, pids := w.jobPIDs()
	if procRoot != "/proc" || len(pids) != 1 || pids[0] != w.root {
		t.Fatalf("jobPIDs = %s %v, want /proc [%d]", procRoot, pids, w.root)
	}
	table := rootOnly(w.root)
	if len(table.procs) != 1 || table.procs[w.root].ppid != os.Getpid() || table.procs[w.root].threads != 1 {
		t.Fatalf("rootOnly = %+v, want the one process %d, a child of this one", table.procs, w.root)
	}
	if got := rootOnly(1 << 30); len(got.procs) != 0 { // gone: nothing to count
		t.Fatalf("rootOnly of no process = %+v", got.procs)
	}
	// Without a namespace the run's tree in the machine's table is read.
	if _, pids := (&watched{root: w.root}).jobPIDs(); len(pids) != 1 || pids[0] != w.root {
		t.Fatalf("jobPIDs without a namespace = %v, want [%d]", pids, w.root)
	}
}

// Once the first process has exec'd the jail, a /proc of its own that the
// watcher cannot find — not mounted yet, or taken away by whatever the job
// did to its mounts — must not leave the job's other processes uncounted:
// the watchers read the machine's table below the run, as they did before
// the first-process rule (which, applied whenever the job's /proc was
// missing, counted the first process alone: this test failed).
func TestAJobWhoseProcIsGoneAfterExecIsCountedFromTheMachine(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & echo ready; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := startedAs(t, cmd, "/bin/sleep") // started from another file: it has exec'd since
	if _, err := io.ReadFull(out, make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	if w.firstAlone() {
		t.Fatal("a first process that has exec'd another file is taken as alone")
	}
	if _, pids := w.jobPIDs(); len(pids) != 2 {
		t.Fatalf("jobPIDs = %v, want the shell and its sleep", pids)
	}
	var got []Breach
	w.limits, w.breach = Limits{Processes: 1}, func(b Breach) { got = append(got, b) }
	checkTree(w, readProcTable("/proc"))
	if len(got) != 1 || got[0].Bound != BoundProcesses {
		t.Fatalf("breaches %+v: want processes (two, over a bound of one)", got)
	}
}

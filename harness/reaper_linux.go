//go:build linux

package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// reapWait bounds how long ReapOrphans waits for one SIGKILLed orphan to die
// before leaving it to the next sweep (a process in uninterruptible sleep).
const reapWait = time.Second

var (
	subreaper atomic.Bool

	// harnesses are the live harness processes of this process (pid = their
	// process group). The lock is held across a harness's start and by every
	// sweep, so a sweep never sees a harness it does not know yet.
	harnessMu sync.Mutex
	harnesses = map[int]bool{}
)

// BecomeSubreaper makes this process a child subreaper: a process any job
// started that is orphaned — its parent exited — is re-parented here instead
// of to init, so ReapOrphans can find it even after it left its job's process
// group (setsid) and dropped the job's marker (env -i). bridge serve calls it
// once at start.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	subreaper.Store(true)
	return nil
}

// startTracked starts a harness while holding the sweep lock and records it
// as live until untrack.
func startTracked(start func() (pid int, err error)) error {
	harnessMu.Lock()
	defer harnessMu.Unlock()
	pid, err := start()
	if err == nil {
		harnesses[pid] = true
	}
	return err
}

// untrack forgets a harness once it has been reaped.
func untrack(pid int) {
	harnessMu.Lock()
	defer harnessMu.Unlock()
	delete(harnesses, pid)
}

// ReapOrphans SIGKILLs, as whole process groups, and reaps every child of
// this process that is an orphan of an ended job: a child whose process group
// is neither this process's own (its own helpers) nor a live harness's (a
// running job's background work). It does nothing unless BecomeSubreaper
// succeeded. It returns how many it killed. Called whenever a job's harness
// has been reaped; an orphan that escaped a job still running elsewhere is
// killed too — without the sandbox there is no telling whose it is.
func ReapOrphans() int {
	if !subreaper.Load() {
		return 0
	}
	harnessMu.Lock()
	defer harnessMu.Unlock()
	self, selfGroup := os.Getpid(), syscall.Getpgrp()
	// An orphan is this process's child: its children's lists name them
	// all, where the kernel keeps them; otherwise every process is read.
	var dirs []string
	if childrenListed() {
		for _, c := range children(self) {
			dirs = append(dirs, "/proc/"+strconv.Itoa(c))
		}
	} else {
		dirs, _ = filepath.Glob("/proc/[0-9]*")
	}
	var killed []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		ppid, pgid, ok := procParent(d)
		if !ok || ppid != self || pgid == selfGroup || harnesses[pgid] || harnesses[pid] {
			continue
		}
		if pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = append(killed, pid)
	}
	for _, pid := range killed {
		reap(pid)
	}
	return len(killed)
}

// reap waits for our child pid to die, for at most reapWait.
func reap(pid int) {
	deadline := time.Now().Add(reapWait)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || errors.Is(err, syscall.ECHILD) || (err != nil && !errors.Is(err, syscall.EINTR)) {
			return
		}
		if time.Now().After(deadline) {
			return // the next sweep reaps it
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procParent reads ppid and process group from /proc/<pid>/stat.
func procParent(procDir string) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:]) // state ppid pgrp …
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgid, err1 == nil && err2 == nil
}

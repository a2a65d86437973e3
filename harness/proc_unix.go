//go:build unix

package harness

import (
	"errors"
	"os/exec"
	"syscall"
)

// signalGroup sends SIGTERM (or SIGKILL) to the process group pgid. A group
// that no longer exists is not an error.
func signalGroup(pgid int, kill bool) {
	if pgid <= 0 {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, sig)
}

// jobNice is the scheduling priority a job's harness runs at, which its
// children inherit and cannot raise without CAP_SYS_NICE: a job that takes every core leaves the
// daemon and its watcher the CPU to stop it.
const jobNice = 5

// lowerPriority sets the harness pid to jobNice (best effort).
func lowerPriority(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, jobNice) }

// GroupAlive reports whether any process of group pgid still exists.
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func exitOf(cmd *exec.Cmd, err error) Exit {
	e := Exit{Code: -1}
	if cmd.ProcessState != nil {
		e.Code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		e.Err = err
	}
	return e
}

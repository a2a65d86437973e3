//go:build windows

package harness

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the harness in a new process group. Windows has no
// group signals; Stop kills the process itself (see signalGroup).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func signalGroup(pid int, _ bool) {
	if pid <= 0 {
		return
	}
	if p, err := findProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// lowerPriority does nothing on Windows.
func lowerPriority(int) {}

// GroupAlive is not supported on Windows and reports false.
func GroupAlive(int) bool { return false }

func exitOf(cmd *exec.Cmd, err error) Exit {
	e := Exit{Code: -1}
	if cmd.ProcessState != nil {
		e.Code = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		e.Err = err
	}
	return e
}

func findProcess(pid int) (*os.Process, error) { return os.FindProcess(pid) }

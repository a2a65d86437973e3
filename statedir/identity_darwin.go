package statedir

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// identify asks the kernel for the process's start time.
func identify(pid int) (Process, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if errors.Is(err, unix.ESRCH) || err == nil && k.Proc.P_pid != int32(pid) {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return Process{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	if k.Proc.P_stat == 5 { // SZOMB
		return Process{}, fmt.Errorf("pid %d has exited: %w", pid, ErrGone)
	}
	t := k.Proc.P_starttime
	return Process{Start: fmt.Sprintf("%d.%06d", t.Sec, t.Usec)}, nil
}

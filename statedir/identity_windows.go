package statedir

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// identify asks for the process's creation time and image path.
func identify(pid int) (Process, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return Process{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) == nil && code != 259 { // STILL_ACTIVE
		return Process{}, fmt.Errorf("pid %d has exited: %w", pid, ErrGone)
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return Process{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	p := Process{Start: fmt.Sprint(created.Nanoseconds())}
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) == nil {
		p.Exe = windows.UTF16ToString(buf[:n])
	}
	return p, nil
}

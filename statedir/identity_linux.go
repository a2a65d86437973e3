package statedir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
})

// identify reads /proc/PID/stat's start time (clock ticks since boot, with
// the boot's id, so a pid file that outlived a reboot matches nothing) and
// /proc/PID/exe.
func identify(pid int) (Process, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(proc + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return Process{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Process{}, fmt.Errorf("pid %d: unreadable %s/stat", pid, proc)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is the start time.
	if len(f) < 20 {
		return Process{}, fmt.Errorf("pid %d: unreadable %s/stat", pid, proc)
	}
	if f[0] == "Z" || f[0] == "X" {
		return Process{}, fmt.Errorf("pid %d has exited: %w", pid, ErrGone)
	}
	p := Process{Start: bootID() + "/" + f[19]}
	if exe, err := os.Readlink(proc + "/exe"); err == nil {
		p.Exe = cleanExe(exe)
	}
	return p, nil
}

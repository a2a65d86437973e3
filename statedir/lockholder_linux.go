package statedir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockHolderFromProc finds the flock on path in /proc/locks. ok is false
// when /proc/locks cannot be read (the caller probes instead).
func lockHolderFromProc(path string) (pid int, ok bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, true, nil
		}
		return 0, true, fmt.Errorf("daemon lock %s: %w", path, err)
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false, nil
	}
	defer f.Close()
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 8278 fe:00:9978561 0 EOF"; a waiter's
		// line has "->" after the number.
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || fl[1] != "FLOCK" || fl[3] != "WRITE" || fl[5] != want {
			continue
		}
		pid, err := strconv.Atoi(fl[4])
		if err != nil || pid <= 0 {
			return 0, true, fmt.Errorf("daemon lock %s is held by a process /proc/locks does not name", path)
		}
		return pid, true, nil
	}
	if err := sc.Err(); err != nil {
		return 0, false, nil
	}
	return 0, true, nil
}

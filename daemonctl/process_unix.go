//go:build unix

package daemonctl

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

func exeExts() []string { return []string{""} }

// PIDAlive reports whether pid names a live process: it exists and is not a
// zombie (a zombie has exited; it only waits for its parent to read the
// status).
func PIDAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] != 'Z' && s[i+2] != 'X'
		}
	}
	return true
}

func leadsGroup(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == pid
}

func terminate(pid int, group bool) error { return sendSignal(pid, group, syscall.SIGTERM) }
func kill(pid int, group bool) error      { return sendSignal(pid, group, syscall.SIGKILL) }

func sendSignal(pid int, group bool, sig syscall.Signal) error {
	target := pid
	if group {
		target = -pid
	}
	err := syscall.Kill(target, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// killGroupLeftovers kills what remains of a group whose leader has exited.
func killGroupLeftovers(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// ExecForeground replaces this process with bin (signals then reach the daemon directly).
func ExecForeground(bin string, args, env []string) error {
	return syscall.Exec(bin, append([]string{bin}, args...), env)
}

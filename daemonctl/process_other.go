//go:build !unix

package daemonctl

import (
	"os"
	"os/exec"
)

func detach(cmd *exec.Cmd) {}

func exeExts() []string { return []string{".exe", ""} }

// PIDAlive reports whether pid names a process.
func PIDAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p
	return true
}

func leadsGroup(pid int) bool { return false }

func terminate(pid int, group bool) error { return kill(pid, group) }

func kill(pid int, group bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}

func killGroupLeftovers(pgid int) {}

// ExecForeground runs bin as a child and waits (no exec on this OS).
func ExecForeground(bin string, args, env []string) error {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

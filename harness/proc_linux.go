//go:build linux

package harness

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the harness in a new process group (so a stop reaches
// every process it started) and has the kernel kill it if the daemon dies.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

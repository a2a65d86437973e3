//go:build unix && !linux

package harness

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the harness in a new process group, so a stop reaches
// every process it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

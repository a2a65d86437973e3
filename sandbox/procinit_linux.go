//go:build linux

package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcCommand is the bridge subcommand a job's jail starts first, inside
// its own PID namespace (ProcMain).
const ProcCommand = "jail-proc"

// ProcMain is `bridge jail-proc -- COMMAND...`: the first command inside a
// job's jail. It mounts a fresh /proc of the jail's own PID namespace over
// the host's (which stays beneath: a nested sandbox may mount a /proc of its
// own only where one is fully visible), so the jail shows its own processes
// alone, and then replaces itself with COMMAND. Nothing is mounted over the
// new /proc, which Claude Code's nested bubblewrap needs to give its
// commands one. It returns only on failure, with the exit code.
func ProcMain(args []string, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintf(stderr, "bridge %s: no command after --\n\nUsage: bridge %s -- COMMAND...\n(started by the daemon as the first command of each job's jail; not for use by hand)\n", ProcCommand, ProcCommand)
		return 2
	}
	cmd := args[1:]
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fmt.Fprintf(stderr, "bridge %s: mount the jail's own /proc: %v\n", ProcCommand, err)
		return 1
	}
	bin, err := exec.LookPath(cmd[0])
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", ProcCommand, err)
		return 1
	}
	err = syscall.Exec(bin, cmd, os.Environ())
	fmt.Fprintf(stderr, "bridge %s: run %s: %v\n", ProcCommand, cmd[0], err)
	return 1
}

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

// ProcCommand is the bridge subcommand that starts a job's jail in the
// job's own PID namespace (ProcMain).
const ProcCommand = "jail-proc"

// ProcWrapArgs is the argv that starts jail (bubblewrap's argv ending in
// "--" and the command) through exe's ProcCommand; it must be started with
// PIDNamespaceAttr. A jail in an overlay gets the same from OverlayMain.
func ProcWrapArgs(exe string, jail []string) []string {
	return append([]string{exe, ProcCommand, "--"}, jail...)
}

// PIDNamespaceAttr starts a process as the first of a new PID and mount
// namespace, and, for a daemon that is not root, of a user namespace whose
// root it is (the jail maps the daemon's ids back: JailOptions.MapUser), so
// it may mount that namespace's /proc.
func PIDNamespaceAttr(a *syscall.SysProcAttr) {
	if os.Getuid() != 0 {
		NamespaceAttr(a)
	}
	a.Cloneflags |= unix.CLONE_NEWPID | unix.CLONE_NEWNS
}

// ProcMain is `bridge jail-proc -- COMMAND...`, the first process of a
// job's PID namespace: it mounts that namespace's /proc (mountProc) and
// replaces itself with COMMAND, the jail. It returns only on failure, with
// the exit code.
func ProcMain(args []string, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintf(stderr, "bridge %s: no command after --\n\nUsage: bridge %s -- COMMAND...\n(started by the daemon for each job's jail, in a new PID namespace; not for use by hand)\n", ProcCommand, ProcCommand)
		return 2
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintf(stderr, "bridge %s: make the mounts private (is this a new mount namespace?): %v\n", ProcCommand, err)
		return 1
	}
	if err := mountProc(); err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", ProcCommand, err)
		return 1
	}
	return execCommand(ProcCommand, args[1:], stderr)
}

// mountProc mounts the PID namespace's own /proc over the one this mount
// namespace has (the host's stays beneath: a user namespace may mount a
// /proc only where one is fully visible). The jail binds it, so it shows
// the job's processes alone, and the daemon reads them there
// (/proc/<the first process>/root/proc). Nothing is mounted over it, which
// Claude Code's nested bubblewrap needs to give its commands one.
func mountProc() error {
	if os.Getpid() != 1 {
		return fmt.Errorf("not the first process of a PID namespace (pid %d)", os.Getpid())
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the job's own /proc: %w", err)
	}
	return nil
}

// execCommand replaces this process with cmd; it returns only on failure.
func execCommand(who string, cmd []string, stderr io.Writer) int {
	bin, err := exec.LookPath(cmd[0])
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n", who, err)
		return 1
	}
	err = syscall.Exec(bin, cmd, os.Environ())
	fmt.Fprintf(stderr, "bridge %s: run %s: %v\n", who, cmd[0], err)
	return 1
}

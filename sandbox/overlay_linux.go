//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// OverlayCommand is the bridge subcommand that mounts a job's overlay and
// then becomes the jail (OverlayMain).
const OverlayCommand = "jail-overlay"

// Overlay is one job's view of its workspace: the workspace is the lower
// layer, and every write the job makes lands in Upper, never in the
// workspace. Work is overlayfs's scratch dir (same filesystem as Upper);
// Merged is where the view is mounted inside the job's own mount namespace,
// which the jail then binds at the workspace's path.
type Overlay struct {
	Lower  string // the admitted workspace (absolute)
	Upper  string
	Work   string
	Merged string
}

// Dirs makes the overlay's upper, work and mount dirs (0700).
func (o Overlay) Dirs() error {
	for _, d := range []string{o.Upper, o.Work, o.Merged} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("overlay: %w", err)
		}
	}
	return nil
}

// WrapArgs is the argv prefix that starts jail (bubblewrap's argv ending in
// "--") through exe's OverlayCommand: exe must be started in a new user and
// mount namespace (harness.Spec.Namespaces), with the workspace's
// descriptor (OpenDirNoSymlinks) as fd lowerFD.
func (o Overlay) WrapArgs(exe string, lowerFD int, jail []string) ([]string, error) {
	for _, p := range []string{o.Lower, o.Upper, o.Work, o.Merged} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("overlay: %q is not an absolute path", p)
		}
		// mount(2) takes the dirs in one option string: these would split it.
		if strings.ContainsAny(p, ",:\\\n") {
			return nil, fmt.Errorf("overlay: the path %q holds a comma, colon or backslash, which overlayfs's options cannot carry; move it (or BRIDGE_STATE_DIR) to a plainer path", p)
		}
	}
	args := []string{exe, OverlayCommand,
		"--lower", o.Lower, "--lower-fd", strconv.Itoa(lowerFD),
		"--upper", o.Upper, "--work", o.Work, "--merged", o.Merged, "--"}
	return append(args, jail...), nil
}

// OverlayMain is `bridge jail-overlay`: inside the new user, mount and PID
// namespace it was started in (NamespaceAttr), it checks that --lower is still the
// directory of the descriptor --lower-fd (the workspace as admitted, never
// what its path points at now), mounts the overlay at --merged and the PID
// namespace's own /proc (mountProc), and replaces itself with the command
// after "--" (the jail). It returns only
// on failure, with the exit code.
func OverlayMain(args []string, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "bridge %s: "+format+"\n", append([]any{OverlayCommand}, a...)...)
		return 1
	}
	o, fd, cmd, err := parseOverlayArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "bridge %s: %v\n\nUsage: bridge %s --lower DIR --lower-fd N --upper DIR --work DIR --merged DIR -- COMMAND...\n(started by the daemon for every agent job that may write; not for use by hand)\n", OverlayCommand, err, OverlayCommand)
		return 2
	}
	// Nothing mounted here may reach the namespace the daemon runs in.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("make the mounts private (is this a new mount namespace?): %v", err)
	}
	// The descriptor was opened in the daemon's mount namespace, which
	// overlayfs refuses as a layer; the path is opened again here, without
	// following a link, and must be the same directory.
	lower, err := OpenDirNoSymlinks(o.Lower)
	if err != nil {
		return fail("the workspace changed since it was admitted: %v", err)
	}
	var was, is unix.Stat_t
	if err := unix.Fstat(fd, &was); err != nil {
		return fail("the workspace's descriptor: %v", err)
	}
	if err := unix.Fstat(int(lower.Fd()), &is); err != nil {
		return fail("the workspace: %v", err)
	}
	if was.Dev != is.Dev || was.Ino != is.Ino {
		return fail("the workspace %s is no longer the directory that was admitted", o.Lower)
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=%s,workdir=%s,userxattr", lower.Fd(), o.Upper, o.Work)
	if err := unix.Mount("overlay", o.Merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fail("mount the overlay of %s: %v", o.Lower, err)
	}
	lower.Close()
	unix.Close(fd)
	if err := mountProc(); err != nil {
		return fail("%v", err)
	}
	return execCommand(OverlayCommand, cmd, stderr)
}

func parseOverlayArgs(args []string) (Overlay, int, []string, error) {
	var o Overlay
	fd := -1
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(args) < 2 {
			return o, 0, nil, fmt.Errorf("%s needs a value", a)
		}
		v := args[1]
		switch a {
		case "--lower":
			o.Lower = v
		case "--upper":
			o.Upper = v
		case "--work":
			o.Work = v
		case "--merged":
			o.Merged = v
		case "--lower-fd":
			n, err := strconv.Atoi(v)
			if err != nil || n < 3 {
				return o, 0, nil, fmt.Errorf("--lower-fd %q is not a descriptor number of 3 or more", v)
			}
			fd = n
		default:
			return o, 0, nil, fmt.Errorf("unknown flag %q", a)
		}
		args = args[2:]
	}
	switch {
	case o.Lower == "" || o.Upper == "" || o.Work == "" || o.Merged == "" || fd < 0:
		return o, 0, nil, errors.New("--lower, --lower-fd, --upper, --work and --merged are all required")
	case len(args) == 0:
		return o, 0, nil, errors.New("no command after --")
	}
	return o, fd, args, nil
}

// ProbeOverlay checks that a job's overlay can be had here: it mounts one
// over a scratch dir below dir through exe's OverlayCommand, as a job's
// start does, and runs `exe version` in it. nil: jobs write into overlays.
func ProbeOverlay(exe, dir string) error {
	scratch, err := os.MkdirTemp(dir, "overlay-probe-")
	if err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	defer RemoveOverlayDirs(scratch)
	o := Overlay{
		Lower: filepath.Join(scratch, "lower"), Upper: filepath.Join(scratch, "upper"),
		Work: filepath.Join(scratch, "work"), Merged: filepath.Join(scratch, "merged"),
	}
	if err := os.Mkdir(o.Lower, 0o700); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	if err := o.Dirs(); err != nil {
		return err
	}
	lower, err := OpenDirNoSymlinks(o.Lower)
	if err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	defer lower.Close()
	argv, err := o.WrapArgs(exe, 3, []string{exe, "version"})
	if err != nil {
		return err
	}
	// Bounded: an exe that is not a bridge (a test binary) must not hang a start.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{lower}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	NamespaceAttr(cmd.SysProcAttr)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("overlay probe: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NamespaceAttr makes a child start in a new user, mount and PID namespace in
// which it is root (uid and gid 0 mapped to the daemon's own), which is what
// an unprivileged overlay mount needs. The jail (bubblewrap) then maps the
// daemon's uid back for the harness (JailOptions.MapUser).
func NamespaceAttr(a *syscall.SysProcAttr) {
	a.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// RemoveOverlayDirs removes dir and everything below it, overlayfs's work
// dir included, whose leftover subdir has no permissions at all.
func RemoveOverlayDirs(dir string) error {
	// WalkDir calls back on a dir before it lists it: the chmod comes first.
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

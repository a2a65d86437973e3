//go:build !linux

package sandbox

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// OverlayCommand is the bridge subcommand that mounts a job's overlay
// (Linux only).
const OverlayCommand = "jail-overlay"

// Overlay is one job's view of its workspace (Linux only: see overlay_linux.go).
type Overlay struct{ Lower, Upper, Work, Merged string }

// Dirs makes the overlay's dirs.
func (o Overlay) Dirs() error { return errNoOverlay() }

// WrapArgs has no overlay to start outside Linux.
func (o Overlay) WrapArgs(string, int, []string) ([]string, error) { return nil, errNoOverlay() }

// OverlayMain has no overlay to mount outside Linux.
func OverlayMain(_ []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "bridge %s: %v\n", OverlayCommand, errNoOverlay())
	return 1
}

// ProbeOverlay says why no overlay can be had here.
func ProbeOverlay(string, string) error { return errNoOverlay() }

// NamespaceAttr does nothing outside Linux.
func NamespaceAttr(*syscall.SysProcAttr) {}

// RemoveOverlayDirs removes dir.
func RemoveOverlayDirs(dir string) error { return os.RemoveAll(dir) }

func errNoOverlay() error {
	return fmt.Errorf("a job's overlay needs Linux's overlayfs, which %s does not have", runtime.GOOS)
}

// ProcCommand is the bridge subcommand that gives a job's jail its own
// /proc (Linux only).
const ProcCommand = "jail-proc"

// ProcWrapArgs is jail unchanged outside Linux, which has no jail.
func ProcWrapArgs(_ string, jail []string) []string { return jail }

// PIDNamespaceAttr does nothing outside Linux.
func PIDNamespaceAttr(*syscall.SysProcAttr) {}

// ProcMain has no jail to mount a /proc in outside Linux.
func ProcMain(_ []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "bridge %s: a job's jail needs Linux (running on %s)\n", ProcCommand, runtime.GOOS)
	return 1
}

//go:build linux

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ptySysProcAttr makes the child lead a session with the pty as its
// controlling terminal, as a login shell's child has.
func ptySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true}
}

// echoOff reports whether the pty has echo turned off (a password read).
func echoOff(ptmx *os.File) bool {
	t, err := unix.IoctlGetTermios(int(ptmx.Fd()), unix.TCGETS)
	return err == nil && t.Lflag&unix.ECHO == 0
}

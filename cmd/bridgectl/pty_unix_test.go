package main

import "syscall"

// ptySysProcAttr makes the child lead a session with the pty as its
// controlling terminal, as a login shell's child has.
func ptySysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true}
}

package statedir

import (
	"errors"
	"fmt"
	"strings"
)

// Process names one process for as long as it lives: its pid, and what a
// recycled pid does not share with it — when it started and, where the OS
// tells, which executable it runs. daemon.json and tunnel.json record one, so
// bridgectl signals a pid only while it is still the process recorded.
type Process struct {
	PID   int
	Exe   string // "" where the OS does not tell
	Start string // opaque; compared, never parsed
}

// Errors of Identify and Process.Check.
var (
	// ErrNoIdentity: this OS does not tell a process's start time, so a pid
	// cannot be told apart from a recycled one.
	ErrNoIdentity = errors.New("this OS does not tell when a process started")
	// ErrGone: no process has the pid (or it has exited and waits for its parent).
	ErrGone = errors.New("no such process")
)

// Identify reads what names pid now.
func Identify(pid int) (Process, error) {
	if pid <= 0 {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	p, err := identify(pid)
	if err != nil {
		return Process{}, err
	}
	p.PID = pid
	return p, nil
}

// Check reports whether the process living at p.PID now is p: nil when it
// started when p did (and runs p.Exe, when both are known). A process
// recorded without a start time cannot be checked (ErrNoIdentity).
func (p Process) Check() error {
	if p.Start == "" {
		return fmt.Errorf("pid %d was recorded without its start time: %w", p.PID, ErrNoIdentity)
	}
	now, err := Identify(p.PID)
	if err != nil {
		return err
	}
	if now.Start != p.Start {
		return fmt.Errorf("pid %d is a different process now (started %s, the recorded one %s)", p.PID, now.Start, p.Start)
	}
	if p.Exe != "" && now.Exe != "" && now.Exe != p.Exe {
		return fmt.Errorf("pid %d runs %s, not the recorded %s", p.PID, now.Exe, p.Exe)
	}
	return nil
}

// cleanExe drops the mark Linux appends to the link of an executable that
// was replaced on disk while it runs (a rebuilt binary is still the process
// that was recorded).
func cleanExe(s string) string { return strings.TrimSuffix(s, " (deleted)") }

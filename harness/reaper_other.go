//go:build !linux

package harness

import "errors"

// BecomeSubreaper needs Linux's PR_SET_CHILD_SUBREAPER; elsewhere an orphan
// that left its job's process group and marker is not found (SECURITY.md).
func BecomeSubreaper() error {
	return errors.New("child subreaper: only on Linux")
}

func startTracked(start func() (pid int, err error)) error {
	_, err := start()
	return err
}

func untrack(int) {}

// ReapOrphans does nothing off Linux.
func ReapOrphans() int { return 0 }

//go:build !linux && !darwin && !windows

package statedir

import "fmt"

func identify(pid int) (Process, error) {
	return Process{}, fmt.Errorf("pid %d: %w", pid, ErrNoIdentity)
}

//go:build unix

package statedir

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive, non-blocking flock on f.
func tryLock(f *os.File) (bool, error) { return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) }

// lockWait takes an exclusive flock on f, waiting for it.
func lockWait(f *os.File) error {
	_, err := flock(f, syscall.LOCK_EX)
	return err
}

// probeHeld reports whether another open file holds an exclusive flock on f:
// a shared lock is refused then. One it gets is released at once.
func probeHeld(f *os.File) (bool, error) {
	got, err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		return false, err
	}
	if got {
		unlock(f)
	}
	return !got, nil
}

func flock(f *os.File, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

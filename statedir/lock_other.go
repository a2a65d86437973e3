//go:build !unix && !windows

package statedir

import (
	"errors"
	"os"
)

// tryLock: this platform has no advisory lock the bridge uses; the daemon
// runs unguarded there (it is not a supported daemon platform).
func tryLock(*os.File) (bool, error) { return true, nil }

func lockWait(*os.File) error { return nil }

func probeHeld(*os.File) (bool, error) { return false, errors.ErrUnsupported }

func unlock(*os.File) {}

//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
)

// OpenDirNoSymlinks needs openat2, which only Linux has; the jail that
// binds what it opens is Linux-only too.
func OpenDirNoSymlinks(p string) (*os.File, error) {
	return nil, fmt.Errorf("open %s without following a symlink: not supported on %s", p, runtime.GOOS)
}

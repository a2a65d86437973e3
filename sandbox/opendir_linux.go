//go:build linux

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirNoSymlinks opens the directory at the absolute path p as an
// O_PATH descriptor, refusing a symlink in any of its components
// (openat2 RESOLVE_NO_SYMLINKS). Bound with bubblewrap's --bind-fd, it is
// exactly the directory that was checked: a component swapped for a link
// afterwards changes nothing that is mounted.
func OpenDirNoSymlinks(p string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s without following a symlink: %w", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

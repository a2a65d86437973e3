package sandbox

import (
	"errors"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turned out missing (before Linux 5.6, or
// refused by a seccomp filter): the components are then opened one by one.
var noOpenat2 atomic.Bool

// openBeneath opens parts below dirfd in one openat2 call that refuses to
// leave dirfd and to follow any symlink on the way.
func openBeneath(dirfd int, parts []string, rel string, flags int) (int, error) {
	if !noOpenat2.Load() {
		name := "."
		if len(parts) > 0 {
			name = strings.Join(parts, "/")
		}
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return openComponents(dirfd, parts, flags)
}

package fulldisk

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func mount(dir string, size int) error {
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
}

func unmount(dir string) error { return unix.Unmount(dir, unix.MNT_DETACH) }

func remount(dir string, size int, ro bool) error {
	flags := uintptr(unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if ro {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount("tmpfs", dir, "tmpfs", flags, fmt.Sprintf("size=%d,mode=0700", size))
}

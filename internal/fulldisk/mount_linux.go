package fulldisk

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func mount(dir string, size int) error {
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
}

func unmount(dir string) error { return unix.Unmount(dir, unix.MNT_DETACH) }

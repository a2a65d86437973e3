//go:build unix

package changes

import "syscall"

// openFileFlags open a file without following a symlink and without
// blocking on a FIFO swapped in for it.
const openFileFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

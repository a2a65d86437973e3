//go:build unix

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// hardLinks returns the link count of path when it is an existing regular file.
func hardLinks(path string) (uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

package mcpsock

import (
	"errors"
	"io/fs"
	"syscall"
)

// refused reports whether err is a socket nobody listens on (the daemon is
// gone): nothing of the call was sent, so it may be sent again.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT)
}

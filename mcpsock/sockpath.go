package mcpsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
)

// maxSocketPath is the longest socket path every OS binds: sun_path holds
// 108 bytes on Linux and 104 on macOS, the last one a NUL.
const maxSocketPath = 103

// Listen listens on the unix socket at path, mode 0600, replacing a socket
// file left there (the caller holds the state dir's lock, so it is a dead
// daemon's). A path too long for sun_path is bound through its directory
// where the OS allows it (shortPath). Close removes the file.
func Listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the old socket %s: %w", path, err)
	}
	name, done, err := shortPath(path)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", name)
	done()
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	// The name bound may be a /proc/self/fd path whose fd is closed now:
	// unlinking it at Close could hit another file, so remove path instead.
	ul.SetUnlinkOnClose(false)
	// The state dir is 0700, so nobody else reaches the file in the moment
	// between bind and chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ul.Close()
		os.Remove(path)
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return &listener{UnixListener: ul, path: path}, nil
}

type listener struct {
	*net.UnixListener
	path string
}

// Addr is the socket's real path, not the name it was bound under.
func (l *listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *listener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// Dial connects to the unix socket at path (long paths as Listen).
func Dial(ctx context.Context, path string) (net.Conn, error) {
	name, done, err := shortPath(path)
	if err != nil {
		return nil, err
	}
	defer done()
	var d net.Dialer
	return d.DialContext(ctx, "unix", name)
}

// tooLong is the error for a socket path no trick shortens.
func tooLong(path string) error {
	return fmt.Errorf("the socket path %s is %d bytes, longer than the %d a unix socket allows: set BRIDGE_STATE_DIR to a shorter path", path, len(path), maxSocketPath)
}

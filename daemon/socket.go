package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// maxSocketPath is the longest socket path every OS binds: sun_path holds
// 108 bytes on Linux and 104 on macOS, the last one a NUL.
const maxSocketPath = 103

// listenSocket listens on <state>/daemon.sock, mode 0600. The state dir is
// 0700 (statedir.Open), so nobody else can reach the file even in the moment
// between bind and chmod; a job cannot at all, for its jail does not mount
// the state dir (only approvals/, audit.log and switches/ are bound in).
// The daemon holds the state dir's lock, so a socket file found here is a
// dead daemon's and is replaced.
func (d *Daemon) listenSocket() (net.Listener, error) {
	path := d.dir.SocketFile()
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("the socket path %s is %d bytes, longer than the %d a unix socket allows: set BRIDGE_STATE_DIR to a shorter path", path, len(path), maxSocketPath)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the old socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}

// serveSocket listens on the unix socket and serves it until Close; a
// socket that cannot be made is logged and the daemon serves HTTP alone
// (`bridge stdio` then says it cannot reach the daemon, and why is in the log).
func (d *Daemon) serveSocket() {
	ln, err := d.listenSocket()
	if err != nil {
		d.log.Error().Err(err).Msg("no unix socket: `bridge stdio` cannot reach this daemon; the HTTP endpoint serves")
		return
	}
	d.socket = ln.Addr().String()
	d.sockDone = make(chan struct{})
	go func() { // owner: Daemon; joined by Close
		defer close(d.sockDone)
		if err := d.srv.ServeSocket(d.stopCtx, ln); err != nil {
			d.log.Error().Err(err).Msg("unix socket")
		}
	}()
}

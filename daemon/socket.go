package daemon

import "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"

// serveSocket listens on <state>/daemon.sock (mode 0600 in the 0700 state
// dir) and serves the MCP endpoint there without the path secret until
// Close. A job cannot reach it: its jail does not mount the state dir (only
// approvals/, audit.log and switches/ are bound in). A socket that cannot
// be made is logged and the daemon serves HTTP alone (`bridge stdio` then
// says it cannot reach the daemon).
func (d *Daemon) serveSocket() {
	ln, err := mcpsock.Listen(d.dir.SocketFile())
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

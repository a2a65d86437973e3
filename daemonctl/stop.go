package daemonctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/guard"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

// Stop stops the daemon's process group (SIGTERM, StopGrace, SIGKILL) and
// removes its pid file and any daemon.json it could not remove itself. It
// signals only the process proved to be the daemon (Find), never a stale
// pid. It returns what it found: PID is the pid it stopped (0: none).
func (c *Controller) Stop(ctx context.Context) (Status, error) {
	s := c.Probe(ctx)
	if s.PID != 0 {
		if err := StopProcess(ctx, s.Proc, c.stopGrace()); err != nil {
			return s, err
		}
		// A process whose leader is gone may still be closing its other
		// threads' files, the lock among them: a daemon started now would
		// find the lock held. Wait for it to be free.
		deadline := time.Now().Add(5 * time.Second)
		for holder, err := c.Dir.LockHolder(); err == nil && holder == s.PID && time.Now().Before(deadline); holder, err = c.Dir.LockHolder() {
			time.Sleep(20 * time.Millisecond) // the kernel sends no event when a lock is dropped
		}
	}
	os.Remove(c.Dir.PIDFile())
	if holder, err := c.Dir.LockHolder(); err == nil && holder == 0 {
		os.Remove(c.Dir.DaemonInfoFile())
	}
	return s, nil
}

// Reload restarts the running daemon on the settings of Config: through
// systemd when a systemd unit runs it (so it stays supervised), else Stop
// and Start — on the port it had when PORT is 0, so a tunnel's origin keeps
// working. Run CheckBeforeStop first.
func (c *Controller) Reload(ctx context.Context, running Status) (Status, error) {
	if unit, user := SystemdUnit(running.PID); unit != "" {
		return c.restartUnit(ctx, unit, user, running.PID)
	}
	pin := 0
	if c.Config.Port == 0 {
		pin = PortOf(running.Addr)
	}
	if _, err := c.Stop(ctx); err != nil {
		return Status{}, err
	}
	return c.Start(ctx, StartOptions{PinPort: pin, JustFreed: true})
}

// ErrKeptRunning marks a refusal of a reload or restart made before
// anything was stopped.
var ErrKeptRunning = errors.New("nothing was stopped")

// KeptRunning is err, said as a refusal that left the daemon (pid) running.
func KeptRunning(err error, pid int) error {
	return fmt.Errorf("%w — %w: the daemon (pid %d) still runs on the settings it read at its start", err, ErrKeptRunning, pid)
}

// CheckBeforeStop is what would make the new daemon refuse to start,
// checked while the old one (running) still runs: a reload or restart stops
// nothing when it fails (KeptRunning). A .env that does not parse, or a bad
// value, failed already when Config was loaded.
func (c *Controller) CheckBeforeStop(running Status) error {
	if err := c.Config.CheckSecret(); err != nil {
		return KeptRunning(fmt.Errorf("%s: %w", c.EnvPath, err), running.PID)
	}
	home, _ := c.getenv("HOME")
	if err := guard.CheckRuntimeRoots(c.Config, home); err != nil {
		return KeptRunning(fmt.Errorf("%s: %w", c.EnvPath, err), running.PID)
	}
	if _, err := c.Bridge(); err != nil {
		return KeptRunning(err, running.PID)
	}
	if p := c.Config.Port; p != 0 && p != PortOf(running.Addr) {
		ln, err := listenSoon(config.Config{Host: c.Config.Host, Port: p}.Addr(), 0)
		if err != nil {
			return KeptRunning(fmt.Errorf("PORT=%d in %s is taken (%v): free it or pick another", p, c.EnvPath, errors.Unwrap(err)), running.PID)
		}
		ln.Close()
	}
	return nil
}

// CanReloadSecret reports whether the running daemon takes a new path secret
// without a restart (its socket serves server.SecretReloadRoute).
func CanReloadSecret(running Status) bool {
	return running.Info != nil && running.Info.SecretReload && running.Info.Socket != ""
}

// ReloadSecret has the running daemon read its path secret again, over its
// unix socket: from its answer on, the HTTP endpoint admits only the secret
// now in its .env, and every call and agent job runs on. changed is false
// when the daemon still has the secret it had (its environment sets it).
func (c *Controller) ReloadSecret(ctx context.Context, running Status) (changed bool, err error) {
	if !CanReloadSecret(running) {
		return false, errors.New("the running daemon cannot take a new secret without a restart")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpsock.BaseURL+server.SecretReloadRoute, nil)
	if err != nil {
		return false, err
	}
	hc := mcpsock.HTTPClient(running.Info.Socket)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("ask the daemon over %s: %w", running.Info.Socket, err)
	}
	defer resp.Body.Close()
	var ans server.SecretReload
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil {
		return false, fmt.Errorf("the daemon answered %d, not its secret reload: %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("the daemon did not take the new secret: %s", ans.Error)
	}
	return ans.Changed, nil
}

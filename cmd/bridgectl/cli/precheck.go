package cli

import (
	"errors"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/guard"
)

// errKeptRunning marks a refusal of reload, restart or rotate made before
// anything was stopped.
var errKeptRunning = errors.New("nothing was stopped")

// checkBeforeStop is what would make the new daemon refuse to start,
// checked while the old one still runs: reload, restart and rotate stop
// nothing when it fails, and say why. (A .env that does not parse, or a bad
// value, already failed when the command loaded it.)
func (c *ctl) checkBeforeStop(running daemonStatus) error {
	keep := func(err error) error {
		return fmt.Errorf("%w — %w: the daemon (pid %d) still runs on the settings it read at its start", err, errKeptRunning, running.PID)
	}
	if c.pick.daemon != "" && c.cfg.EnvFile == "" {
		return keep(fmt.Errorf("%s, the .env the daemon was started with, is gone (restore it, or name another with --env)", c.pick.daemon))
	}
	if err := c.cfg.CheckSecret(); err != nil {
		return keep(fmt.Errorf("%s: %w", c.envPath, err))
	}
	home, _ := c.e.Getenv("HOME")
	if err := guard.CheckRuntimeRoots(c.cfg, home); err != nil {
		return keep(fmt.Errorf("%s: %w", c.envPath, err))
	}
	if _, err := findBridge(c.e); err != nil {
		return keep(err)
	}
	if p := c.cfg.Port; p != 0 && p != portOf(running.Addr) {
		ln, err := listenSoon(config.Config{Host: c.cfg.Host, Port: p}.Addr(), 0)
		if err != nil {
			return keep(fmt.Errorf("PORT=%d in %s is taken (%v): free it or pick another", p, c.envPath, errors.Unwrap(err)))
		}
		ln.Close()
	}
	return nil
}

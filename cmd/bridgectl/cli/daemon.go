package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

// The daemon's lifecycle is package daemonctl's; bridgectl's commands say
// what it did. These are the bounds its tests shorten.
var (
	daemonStartTimeout = daemonctl.DefaultStartTimeout // a new daemon's wait for /health
	stopGrace          = daemonctl.DefaultStopGrace    // between SIGTERM and SIGKILL
)

// control is the daemon of this command's state dir, started with its
// config, .env and environment; notes go to the command's outputs (masked).
func (c *ctl) control() *daemonctl.Controller {
	return &daemonctl.Controller{
		Config: c.cfg, Dir: c.dir, EnvPath: c.envPath, Environ: c.e.Environ, Exe: c.e.Exe,
		HTTP: c.e.HTTP, Stdout: c.e.Stdout, Stderr: c.e.Stderr, Now: c.e.Now, For: c.startedFor,
		StartTimeout: daemonStartTimeout, StopGrace: stopGrace,
	}
}

// daemon is who the daemon is and whether /health answers.
func (c *ctl) daemon(ctx context.Context) daemonctl.Status { return c.control().Probe(ctx) }

// daemonProc is daemon without the /health probe.
func (c *ctl) daemonProc() daemonctl.Status { return c.control().Find() }

// tunnel is the cloudflared bridgectl started, proved, or what is stale.
func (c *ctl) tunnel() daemonctl.TunnelStatus { return c.control().Tunnel() }

// findBridge locates the daemon binary: BRIDGE_BIN, next to bridgectl, then PATH.
func findBridge(e *Env) (string, error) { return daemonctl.FindBridge(e.Environ, e.Exe) }

// lookPath finds name on the PATH of env (not bridgectl's own, so tests can steer it).
func lookPath(e *Env, name string) (string, error) {
	path, _ := e.Getenv("PATH")
	return daemonctl.LookPath(path, name)
}

// startDaemon starts the daemon (daemonctl.Controller.Start) and, when it
// never answered, prints the last lines of its log before the error.
func (c *ctl) startDaemon(ctx context.Context, o daemonctl.StartOptions) (daemonctl.Status, error) {
	st, err := c.control().Start(ctx, o)
	c.printStartLog(err)
	return st, err
}

// printStartLog prints the log lines of a start that failed, masked and
// with their controls shown.
func (c *ctl) printStartLog(err error) {
	var se *daemonctl.StartError
	if errors.As(err, &se) {
		for _, l := range se.Tail {
			fmt.Fprintf(c.e.Stderr, "  | %s\n", visibleLine(l, maxLogLine))
		}
	}
}

// stopDaemon stops the daemon (daemonctl.Controller.Stop).
func (c *ctl) stopDaemon(ctx context.Context) (daemonctl.Status, error) { return c.control().Stop(ctx) }

// portAdvice is how to pick a port other than port.
func (c *ctl) portAdvice(port int) string { return c.control().PortAdvice(port) }

// checkBeforeStop is what would make the new daemon refuse to start, checked
// while the old one still runs (daemonctl.Controller.CheckBeforeStop), and
// the .env the daemon was started with having gone.
func (c *ctl) checkBeforeStop(running daemonctl.Status) error {
	if c.pick.daemon != "" && c.cfg.EnvFile == "" {
		return daemonctl.KeptRunning(fmt.Errorf("%s, the .env the daemon was started with, is gone (restore it, or name another with --env)", c.pick.daemon), running.PID)
	}
	return c.control().CheckBeforeStop(running)
}

// localEndpoint is the MCP URL on the daemon's own address.
func localEndpoint(addr, secret string) string { return "http://" + addr + "/mcp/" + secret }

// overriddenByEnv reports whether the process environment sets name (it
// wins over the .env file).
func (c *ctl) overriddenByEnv(name string) bool {
	_, ok := c.e.Getenv(name)
	return ok
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// errText is an error without the path the caller has named already.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

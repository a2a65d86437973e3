// Package daemonctl is the daemon's lifecycle seen from outside: who the
// daemon of a state dir is (the holder of its lock, described by daemon.json,
// hinted at by bridge.pid) and whether it answers; starting it (`bridge
// serve` detached, waited for until /health answers), stopping and reloading
// it, with the preflight and port advice before a start and the bridge binary
// to run; and the process handling those need (spawn, prove, signal), which
// bridgectl's tunnel uses too. bridgectl's commands and `bridge stdio` (Stdio)
// both stand on it: neither runs the other.
package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Defaults of the Controller's bounds.
const (
	DefaultStartTimeout = 30 * time.Second // a new daemon's wait for /health
	DefaultStopGrace    = 10 * time.Second // between SIGTERM and SIGKILL
)

// Controller is the daemon of one state dir, seen by a program that is not
// it. Fill the fields it needs; the zero values of the optional ones are
// usable.
type Controller struct {
	Config config.Config // the configuration the daemon starts with
	Dir    statedir.Dir  // Config's state dir
	// EnvPath is the .env the daemon is started with (`bridge serve --env`)
	// and the messages name: absolute; when it does not exist the daemon
	// reads the environment alone.
	EnvPath string
	// Environ is the daemon's environment (KEY=VALUE); BRIDGE_BIN, PATH and
	// HOME are read from it.
	Environ []string
	// Bin is the bridge binary to run; "" finds it (FindBridge) next to Exe,
	// the caller's own executable, or on PATH.
	Bin string
	Exe string
	// HTTP asks /health on loopback (nil: a client with a 10 s timeout).
	HTTP *http.Client
	// Stdout gets the notes of a start or reload (which port, systemd),
	// Stderr the warnings (nil: discarded).
	Stdout, Stderr io.Writer
	Now            func() time.Time // nil: time.Now
	// For names who asked for a start in the log's start marker ("": nobody
	// in particular).
	For          string
	StartTimeout time.Duration // 0: DefaultStartTimeout
	StopGrace    time.Duration // 0: DefaultStopGrace
}

// Status is what can be told about the daemon from outside.
type Status struct {
	PID       int                  // the daemon, proved (Find); 0: none runs
	Proc      statedir.Process     // what names it beyond its pid, for the signals
	StalePID  int                  // a pid bridge.pid or daemon.json names that is not the daemon
	StaleNote string               // what StalePID is, in words
	Info      *statedir.DaemonInfo // daemon.json of the daemon
	InfoNote  string               // why there is no Info although a daemon runs
	Addr      string               // where to reach it (from daemon.json, else the config)
	Healthy   bool                 // GET /health answered 200 (Probe)
	HealthErr error
}

// Probe is Find and the answer of the daemon's /health.
func (c *Controller) Probe(ctx context.Context) Status {
	s := c.Find()
	s.HealthErr = Health(ctx, c.httpClient(), s.Addr)
	s.Healthy = s.HealthErr == nil
	return s
}

// Health asks GET /health on addr, briefly.
func Health(ctx context.Context, hc *http.Client, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64*1024))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health answered %d", resp.StatusCode)
	}
	return nil
}

// DialAddr turns a listen address into one a client can dial.
func DialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// PortOf is the port of addr (HOST:PORT), 0 if it has none.
func PortOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// OriginPort is the port of a tunnel's origin URL ("http://HOST:PORT"), 0 if it has none.
func OriginPort(origin string) int {
	u, err := url.Parse(origin)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}

// ErrDisabled is how a start refuses while the bridge is disabled.
var ErrDisabled = errors.New("the bridge is disabled (`bridgectl disable`): run `bridgectl enable` first")

// Disabled reports whether `bridgectl disable` has set the flag file.
func (c *Controller) Disabled() bool {
	_, err := os.Stat(c.Dir.DisabledFlag())
	return err == nil
}

func (c *Controller) getenv(name string) (string, bool) { return lookupEnv(c.Environ, name) }

// lookupEnv reads one variable of environ (the last one wins, as in exec).
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

func (c *Controller) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (c *Controller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Controller) stdout() io.Writer { return orDiscard(c.Stdout) }
func (c *Controller) stderr() io.Writer { return orDiscard(c.Stderr) }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func (c *Controller) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return DefaultStartTimeout
}

func (c *Controller) stopGrace() time.Duration {
	if c.StopGrace > 0 {
		return c.StopGrace
	}
	return DefaultStopGrace
}

// errText is an error without the path the caller has named already.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

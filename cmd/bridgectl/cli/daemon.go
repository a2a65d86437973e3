package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// daemonStartTimeout bounds the wait for a new daemon's /health.
var daemonStartTimeout = 30 * time.Second

// daemonInfo is <state>/daemon.json, written by `bridge serve` once it listens.
type daemonInfo struct {
	Version   int             `json:"version"`
	PID       int             `json:"pid"`
	Addr      string          `json:"addr"`
	StartedAt string          `json:"started_at,omitempty"`
	Harness   json.RawMessage `json:"harness,omitempty"`
	Sandbox   json.RawMessage `json:"sandbox,omitempty"`
	Approval  json.RawMessage `json:"approval,omitempty"`
	// PolicyFloor is the job policy floor file the daemon read, or "none".
	PolicyFloor string `json:"policy_floor,omitempty"`
	Exe         string `json:"exe,omitempty"`
	ProcStart   string `json:"proc_start,omitempty"`
	Socket      string `json:"socket,omitempty"`
	EnvFile     string `json:"env_file,omitempty"`
	// AllowedRoots: nil when the daemon did not say (an older one).
	AllowedRoots *[]string `json:"allowed_roots,omitempty"`
}

// daemonStatus is what bridgectl can tell about the daemon without asking it.
type daemonStatus struct {
	PID       int              // the daemon, proved (daemonProc); 0: none runs
	Proc      statedir.Process // what names it beyond its pid, for the signals
	StalePID  int              // a pid bridge.pid or daemon.json names that is not the daemon
	StaleNote string           // what StalePID is, in words
	Info      *daemonInfo      // daemon.json of the daemon
	InfoNote  string           // why there is no Info although a daemon runs
	Addr      string           // where to reach it (from daemon.json, else the config)
	Healthy   bool             // GET /health answered 200
	HealthErr error
}

func (c *ctl) daemon(ctx context.Context) daemonStatus {
	s := c.daemonProc()
	s.HealthErr = probeHealth(ctx, c.e.HTTP, s.Addr)
	s.Healthy = s.HealthErr == nil
	return s
}

// dialAddr turns a listen address into one a client can dial.
func dialAddr(addr string) string {
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

func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// originPort is the port of a tunnel's origin URL ("http://HOST:PORT"), 0 if it has none.
func originPort(origin string) int {
	u, err := url.Parse(origin)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}

// probeHealth asks GET /health on addr, briefly.
func probeHealth(ctx context.Context, hc *http.Client, addr string) error {
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

// localEndpoint is the MCP URL on the daemon's own address.
func localEndpoint(addr, secret string) string { return "http://" + addr + "/mcp/" + secret }

// findBridge locates the daemon binary: BRIDGE_BIN, next to bridgectl, then PATH.
func findBridge(e *Env) (string, error) {
	if v, ok := e.Getenv("BRIDGE_BIN"); ok && v != "" {
		if _, err := os.Stat(v); err != nil {
			return "", fmt.Errorf("BRIDGE_BIN=%s: %w", v, err)
		}
		return v, nil
	}
	if e.Exe != "" {
		for _, ext := range exeExts() {
			p := filepath.Join(filepath.Dir(e.Exe), "bridge"+ext)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
	}
	if p, err := lookPath(e, "bridge"); err == nil {
		// Linux has another `bridge` on PATH (iproute2's, /sbin/bridge):
		// take one only when it says it is this one.
		if out, err := exec.Command(p, "version").Output(); err == nil && strings.HasPrefix(string(out), "bridge ") && strings.Count(string(out), "\n") == 1 {
			return p, nil
		}
		return "", fmt.Errorf("the `bridge` on PATH (%s) is not the DeepSeek MCP bridge (iproute2 has one too), and none is next to bridgectl: run `make build` (it writes bin/bridge) or set BRIDGE_BIN", p)
	}
	return "", errors.New("the `bridge` binary was not found next to bridgectl or on PATH: run `make build` (it writes bin/bridge) or set BRIDGE_BIN")
}

// preflight checks what would make the daemon fail or be useless. A bad secret
// or a taken port fails (the daemon could not serve); a missing API key only
// warns (the daemon serves and deepseek_flash answers with a clear error).
// wait is how long a just-released port may take to become free (connections
// of a dead daemon linger until their peer closes them).
func (c *ctl) preflight(port int, wait time.Duration) error {
	if err := c.cfg.CheckSecret(); err != nil {
		return err
	}
	if c.cfg.APIKey == "" {
		fmt.Fprintf(c.e.Stderr, "warning: DEEPSEEK_API_KEY is not set in %s or the environment: the bridge starts, but every DeepSeek call will fail until you set it\n", c.envPath)
	}
	if port != 0 {
		addr := config.Config{Host: c.cfg.Host, Port: port}.Addr()
		ln, err := listenSoon(addr, wait)
		if err != nil {
			return fmt.Errorf("port %d on %s is taken (%v): stop whatever listens there (`ss -ltnp 'sport = :%d'`); or %s", port, c.cfg.Host, errors.Unwrap(err), port, c.portAdvice(port))
		}
		ln.Close()
	}
	return nil
}

// portAdvice is how to pick a port other than port, named after where PORT
// came from (a restart may try the port the daemon had, not PORT).
func (c *ctl) portAdvice(port int) string {
	if port != c.cfg.Port {
		return fmt.Sprintf("set PORT in %s (PORT=0 picks a free port)", c.envPath)
	}
	return c.cfg.PortAdvice(c.envPath)
}

// daemonArgs is how bridgectl runs the daemon.
func (c *ctl) daemonArgs() []string {
	if _, err := os.Stat(c.envPath); err == nil {
		return []string{"serve", "--env", c.envPath}
	}
	return []string{"serve"}
}

// startDaemon runs preflight, starts `bridge serve` in the background and
// waits until its daemon.json names it and /health answers. pinPort > 0 makes
// the daemon listen on that port whatever PORT says (reload keeps the tunnel's
// origin when PORT=0). justFreed says a daemon just left the port: give the
// kernel a moment to release it.
func (c *ctl) startDaemon(ctx context.Context, pinPort int, justFreed bool) (daemonStatus, error) {
	port := c.cfg.Port
	if pinPort > 0 {
		port = pinPort
	}
	wait := time.Duration(0)
	if justFreed {
		wait = 5 * time.Second
	}
	if err := c.preflight(port, wait); err != nil {
		return daemonStatus{}, err
	}
	bin, err := findBridge(c.e)
	if err != nil {
		return daemonStatus{}, err
	}
	if err := c.createDir(); err != nil {
		return daemonStatus{}, err
	}
	env := append([]string(nil), c.e.Environ...)
	if pinPort > 0 {
		env = append(env, "PORT="+strconv.Itoa(pinPort))
	}
	// A daemon.json left by a killed daemon must not be mistaken for the new one.
	os.Remove(c.dir.DaemonInfoFile())
	marker := startMarker("start", c.e.Now())
	if c.startedFor != "" {
		marker = strings.TrimSuffix(marker, " ===") + " for " + visible(c.startedFor, 80) + " ==="
	}
	ch, err := spawnDetached(bin, c.daemonArgs(), env, "", c.dir.LogFile(), marker)
	if err != nil {
		return daemonStatus{}, err
	}
	if err := writePID(c.dir.PIDFile(), ch.pid); err != nil {
		ch.stop(ctx, time.Second)
		return daemonStatus{}, err
	}
	fail := func(why string) (daemonStatus, error) {
		ch.stop(context.WithoutCancel(ctx), 2*time.Second)
		os.Remove(c.dir.PIDFile())
		c.printLogTail(c.dir.LogFile(), "start", 20)
		return daemonStatus{}, fmt.Errorf("%s; the daemon's log is above (full log: `bridgectl logs`)", why)
	}
	deadline := time.NewTimer(daemonStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ch.done:
			return fail(fmt.Sprintf("the daemon exited during start (%v)", ch.err))
		case <-deadline.C:
			return fail(fmt.Sprintf("the daemon (pid %d) did not answer /health within %v", ch.pid, daemonStartTimeout))
		case <-ctx.Done():
			return fail("interrupted")
		case <-tick.C:
		}
		var info daemonInfo
		if err := statedir.ReadJSON(c.dir.DaemonInfoFile(), &info); err != nil || info.PID != ch.pid || info.Addr == "" {
			continue
		}
		addr := dialAddr(info.Addr)
		if probeHealth(ctx, c.e.HTTP, addr) == nil {
			return daemonStatus{PID: ch.pid, Proc: ch.proc, Info: &info, Addr: addr, Healthy: true}, nil
		}
	}
}

// stopDaemon stops the daemon's process group and removes its pid file and
// any daemon.json it could not remove itself. It signals only the process
// proved to be the daemon (daemonProc), never a stale pid. It returns what
// it found: PID is the pid it stopped (0: none).
func (c *ctl) stopDaemon(ctx context.Context) (daemonStatus, error) {
	s := c.daemon(ctx)
	if s.PID != 0 {
		if err := stopProc(ctx, s.Proc, stopGrace); err != nil {
			return s, err
		}
		// A process whose leader is gone may still be closing its other
		// threads' files, the lock among them: a daemon started now would
		// find the lock held. Wait for it to be free.
		deadline := time.Now().Add(5 * time.Second)
		for holder, err := c.dir.LockHolder(); err == nil && holder == s.PID && time.Now().Before(deadline); holder, err = c.dir.LockHolder() {
			time.Sleep(20 * time.Millisecond) // the kernel sends no event when a lock is dropped
		}
	}
	os.Remove(c.dir.PIDFile())
	if holder, err := c.dir.LockHolder(); err == nil && holder == 0 {
		os.Remove(c.dir.DaemonInfoFile())
	}
	return s, nil
}

// printLogTail prints the last n lines after the latest marker of a log, masked.
func (c *ctl) printLogTail(path, what string, n int) {
	// The start this is about wrote its marker a moment ago, near the end.
	tail, _, err := tailFile(path, 4*n)
	if err != nil {
		return
	}
	ls := lines(afterLatestMarker([]byte(strings.Join(tail, "\n")), what))
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	for _, l := range ls {
		fmt.Fprintf(c.e.Stderr, "  | %s\n", visibleLine(l, maxLogLine))
	}
}

// envNote is appended to messages that depend on where settings come from.
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

// listenSoon listens on addr, retrying for up to wait while the port is taken.
func listenSoon(addr string, wait time.Duration) (net.Listener, error) {
	deadline := time.Now().Add(wait)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(50 * time.Millisecond) // no event tells when the kernel frees a port
	}
}

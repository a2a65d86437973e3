package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/termtext"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ReadyToStart is what refuses a start before anything is done: the bridge
// is disabled, or a daemon runs already (answering or not). A bridge.pid
// left by a daemon that is gone is removed, with a note on Stderr.
func (c *Controller) ReadyToStart(ctx context.Context) error {
	if c.Disabled() {
		return ErrDisabled
	}
	s := c.Probe(ctx)
	switch {
	case s.PID != 0 && s.Healthy:
		return fmt.Errorf("the daemon is already running (pid %d, http://%s): use `bridgectl restart` or `bridgectl reload`", s.PID, s.Addr)
	case s.PID != 0:
		note := ""
		if s.InfoNote != "" {
			note = "; " + s.InfoNote
		}
		return fmt.Errorf("daemon pid %d is alive but /health on %s does not answer (%v)%s: see `bridgectl logs`, then `bridgectl stop` and start again", s.PID, s.Addr, s.HealthErr, note)
	case s.StalePID != 0:
		// No daemon holds the state dir: what the files name is not ours.
		fmt.Fprintf(c.stderr(), "note: removing a stale pid file (%s)\n", s.StaleNote)
		os.Remove(c.Dir.PIDFile())
	}
	return nil
}

// PortForTunnel is the port a start must listen on for a tunnel that
// outlived its daemon (a crash, a kill): it forwards to a fixed port, so
// coming back on it keeps the public URL working. 0 when there is no such
// tunnel, or PORT is fixed (a PORT other than the tunnel's is warned about).
func (c *Controller) PortForTunnel() int {
	t := c.Tunnel()
	if t.PID == 0 || t.Info == nil {
		return 0
	}
	switch p := OriginPort(t.Info.Origin); {
	case c.Config.Port == 0 && p > 0:
		fmt.Fprintf(c.stdout(), "a tunnel (pid %d) forwards to %s: starting on port %d\n", t.PID, t.Info.Origin, p)
		return p
	case p != c.Config.Port:
		fmt.Fprintf(c.stderr(), "warning: the running tunnel forwards to %s but PORT is %d: run `bridgectl untunnel && bridgectl tunnel` after this\n", t.Info.Origin, c.Config.Port)
	}
	return 0
}

// Preflight checks what would make the daemon fail or be useless, listening
// on port. A bad secret or a taken port fails (the daemon could not serve); a
// missing API key only warns (the daemon serves and deepseek_flash answers
// with a clear error). wait is how long a just-released port may take to
// become free (connections of a dead daemon linger until their peer closes
// them).
func (c *Controller) Preflight(port int, wait time.Duration) error {
	if err := c.Config.CheckSecret(); err != nil {
		return err
	}
	if c.Config.APIKey == "" {
		fmt.Fprintf(c.stderr(), "warning: DEEPSEEK_API_KEY is not set in %s or the environment: the bridge starts, but every DeepSeek call will fail until you set it\n", c.EnvPath)
	}
	if port != 0 {
		addr := config.Config{Host: c.Config.Host, Port: port}.Addr()
		ln, err := listenSoon(addr, wait)
		if err != nil {
			return fmt.Errorf("port %d on %s is taken (%v): stop whatever listens there (`ss -ltnp 'sport = :%d'`); or %s", port, c.Config.Host, errors.Unwrap(err), port, c.PortAdvice(port))
		}
		ln.Close()
	}
	return nil
}

// PortAdvice is how to pick a port other than port, named after where PORT
// came from (a restart may try the port the daemon had, not PORT).
func (c *Controller) PortAdvice(port int) string {
	if port != c.Config.Port {
		return fmt.Sprintf("set PORT in %s (PORT=0 picks a free port)", c.EnvPath)
	}
	return c.Config.PortAdvice(c.EnvPath)
}

// Args are the daemon's arguments: `serve`, with --env when EnvPath exists.
func (c *Controller) Args() []string {
	if _, err := os.Stat(c.EnvPath); c.EnvPath != "" && err == nil {
		return []string{"serve", "--env", c.EnvPath}
	}
	return []string{"serve"}
}

// StartOptions say how Start runs the daemon.
type StartOptions struct {
	// PinPort > 0 makes the daemon listen on that port whatever PORT says
	// (a reload keeps the tunnel's origin when PORT=0).
	PinPort int
	// JustFreed says a daemon just left the port: the kernel gets a moment
	// to release it.
	JustFreed bool
}

// StartError is a start whose daemon never answered. Tail holds the last
// lines the daemon wrote to <state>/bridge.log after its start marker: the
// caller shows them before the error, which says they are above.
type StartError struct {
	Why  string
	Tail []string
}

func (e *StartError) Error() string {
	return e.Why + "; the daemon's log is above (full log: `bridgectl logs`)"
}

// Start runs Preflight, starts `bridge serve` detached (its own session;
// output appended to <state>/bridge.log after a start marker; its pid in
// bridge.pid) and returns once its daemon.json names it and /health
// answers: a live pid alone is not proof of a live server. A daemon that
// exits or does not answer within StartTimeout is stopped (*StartError).
func (c *Controller) Start(ctx context.Context, o StartOptions) (Status, error) {
	port := c.Config.Port
	if o.PinPort > 0 {
		port = o.PinPort
	}
	wait := time.Duration(0)
	if o.JustFreed {
		wait = 5 * time.Second
	}
	if err := c.Preflight(port, wait); err != nil {
		return Status{}, err
	}
	bin, err := c.Bridge()
	if err != nil {
		return Status{}, err
	}
	dir, err := statedir.Open(c.Dir.Root)
	if err != nil {
		return Status{}, err
	}
	env := append([]string(nil), c.Environ...)
	if o.PinPort > 0 {
		env = append(env, "PORT="+strconv.Itoa(o.PinPort))
	}
	// A daemon.json left by a killed daemon must not be mistaken for the new one.
	os.Remove(dir.DaemonInfoFile())
	marker := StartMarker("start", c.now())
	if c.For != "" {
		marker = strings.TrimSuffix(marker, " ===") + " for " + termtext.Line(c.For, 80) + " ==="
	}
	ch, err := Spawn(bin, c.Args(), env, "", dir.LogFile(), marker)
	if err != nil {
		return Status{}, err
	}
	if err := WritePID(dir.PIDFile(), ch.PID); err != nil {
		ch.Stop(ctx, time.Second)
		return Status{}, err
	}
	fail := func(why string) (Status, error) {
		ch.Stop(context.WithoutCancel(ctx), 2*time.Second)
		os.Remove(dir.PIDFile())
		return Status{}, &StartError{Why: why, Tail: logTail(dir.LogFile(), "start", 20)}
	}
	timeout := c.startTimeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond) // no event says when the daemon is up
	defer tick.Stop()
	for {
		select {
		case <-ch.Done():
			return fail(fmt.Sprintf("the daemon exited during start (%v)", ch.Err()))
		case <-deadline.C:
			return fail(fmt.Sprintf("the daemon (pid %d) did not answer /health within %v", ch.PID, timeout))
		case <-ctx.Done():
			return fail("interrupted")
		case <-tick.C:
		}
		var info statedir.DaemonInfo
		if err := statedir.ReadJSON(dir.DaemonInfoFile(), &info); err != nil || info.PID != ch.PID || info.Addr == "" {
			continue
		}
		addr := DialAddr(info.Addr)
		if Health(ctx, c.httpClient(), addr) == nil {
			return Status{PID: ch.PID, Proc: ch.Proc, Info: &info, Addr: addr, Healthy: true}, nil
		}
	}
}

// tailBytes is how much of a log's end logTail reads: the start it is
// about wrote its marker a moment ago, near the end.
const tailBytes = 256 << 10

// logTail is the last n lines of the log at path after its latest `===
// bridgectl WHAT` marker (nil when it cannot be read).
func logTail(path, what string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(0, fi.Size()-tailBytes)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	rest := strings.TrimRight(string(AfterLatestMarker(b, what)), "\n")
	if rest == "" {
		return nil
	}
	ls := strings.Split(rest, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return ls
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

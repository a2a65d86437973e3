package daemonctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/termtext"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/logging"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// reachWait is how long `bridge stdio` waits for a daemon that stopped
// mid-session (a `bridgectl reload`) to come back before starting one.
const reachWait = 15 * time.Second

// startWait is how long `bridge stdio` waits for a daemon another host's
// `bridge stdio` is starting at the same moment (a start's own bound).
const startWait = DefaultStartTimeout

// StdioOptions are what `bridge stdio` runs with.
type StdioOptions struct {
	EnvFile string // --env FILE ("" for BRIDGE_ENV_FILE, then the per-user one)
	// Bridge is the bridge binary a start runs as `bridge serve`: the
	// executable of `bridge stdio` itself.
	Bridge string
	Stdin  io.Reader
	Stdout io.Writer // the host's: MCP messages only
	Stderr io.Writer // what the host logs: every note and error
	// Version is what the not-set-up session's initialize reports.
	Version string
}

// Stdio is `bridge stdio`: it forwards the host's MCP session to the daemon
// of the state dir over its unix socket (mcpsock.Forward), so the host gets
// every tool and jobs belong to the daemon (they outlive the session). When
// no daemon answers it starts one itself — the way `bridgectl start` does,
// with this process's environment, and nothing run in between — and the
// daemon keeps running afterwards. Every failure is said on Stderr (secrets
// redacted) before it is returned (config.MustFix tells the configuration's
// errors); nothing but MCP reaches Stdout. When no daemon can start because
// the bridge is not set up (a configuration the owner must fix, such as no
// MCP_PATH_SECRET), it still speaks MCP until the host goes — initialize,
// tools/list, and every tools/call answered as an error result naming what to
// run — so the host shows the reason, and then returns that error.
func Stdio(ctx context.Context, o StdioOptions) error {
	cfg, err := config.Load(o.EnvFile)
	if err != nil {
		fmt.Fprintf(o.Stderr, "bridge stdio: %v\n", err)
		return &config.Error{Err: err}
	}
	log, closer, err := logging.New(logging.Options{File: cfg.LogFile, Level: cfg.LogLevel, Stderr: o.Stderr, Secrets: cfg.Secrets()})
	if err != nil {
		fmt.Fprintf(o.Stderr, "bridge stdio: %v\n", err)
		return &config.Error{Err: err}
	}
	defer closer.Close()
	log = log.With().Str("cmd", "stdio").Logger()
	// What is said on stderr as a line of text goes to the log only when
	// the log is a file: on stderr it would be the same event twice.
	textLog := zerolog.Nop()
	if cfg.LogFile != "" {
		textLog = log
	}
	named := config.ResolveEnvFile(o.EnvFile, os.LookupEnv)
	if cfg.IgnoredLocalEnv != "" {
		fmt.Fprintf(o.Stderr, "bridge stdio: note: %s\n", config.LocalEnvNote(cfg.IgnoredLocalEnv, named))
	}
	stderr := prefixed{w: logging.NewRedactor(o.Stderr, cfg.Secrets()), prefix: "bridge stdio: "}
	envPath := cfg.EnvFile
	if envPath == "" {
		envPath, _ = filepath.Abs(named)
	}
	c := &Controller{
		Config: cfg, Dir: statedir.Dir{Root: cfg.StateDir}, EnvPath: envPath,
		Environ: os.Environ(), Bin: o.Bridge, Stdout: stderr, Stderr: stderr,
		For: "bridge stdio pid " + strconv.Itoa(os.Getpid()),
	}
	r := &reacher{c: c, sock: c.Dir.SocketFile(), log: log, textLog: textLog, stderr: stderr}
	if err := r.reach(ctx, 0); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		textLog.Error().Err(err).Msg("no daemon to forward to")
		if !config.MustFix(err) {
			return err
		}
		fmt.Fprintln(stderr, "the bridge is not set up: every tool answers with an error that says to run `bridgectl setup`, until the host disconnects")
		why := logging.Redact(notSetUp(err), cfg.Secrets())
		if serr := serveNotSetUp(ctx, why, o, stderr); serr != nil && !errors.Is(serr, context.Canceled) {
			fmt.Fprintf(stderr, "%v\n", serr)
		}
		return err
	}
	log.Info().Str("socket", r.sock).Msg("forwarding MCP from stdio to the daemon")
	err = mcpsock.Forward(ctx, mcpsock.Options{Socket: r.sock, Log: log, Redial: func(ctx context.Context) error { return r.reach(ctx, reachWait) }}, o.Stdin, o.Stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stdio")
		return err
	}
	return nil
}

// notSetUp is the error result of every tool while no daemon can start.
func notSetUp(err error) string {
	return "The DeepSeek bridge is not set up on this machine, so no tool can run: " + err.Error() +
		". Fix: run `bridgectl setup` in a terminal (it writes the API key, the secret and the allowed roots, and starts the daemon), then reconnect this MCP server."
}

// serveNotSetUp is the MCP session of a bridge that is not set up: the
// tools' schemas, each call an error result saying why.
func serveNotSetUp(ctx context.Context, why string, o StdioOptions, stderr io.Writer) error {
	s := mcpserver.NewMCPServer("deepseek-mcp-bridge", o.Version, mcpserver.WithToolCapabilities(false),
		mcpserver.WithInstructions("Not set up: every tool of this server answers with an error until its owner runs `bridgectl setup`."))
	s.AddTools(tools.Unavailable(why)...)
	ss := mcpserver.NewStdioServer(s)
	ss.SetErrorLogger(log.New(stderr, "", 0))
	return ss.Listen(ctx, o.Stdin, o.Stdout)
}

// reacher finds the daemon's socket, and starts the daemon when none answers.
type reacher struct {
	mu   sync.Mutex // one reach at a time: calls that fail together wait for one restart
	c    *Controller
	sock string
	log  zerolog.Logger
	// textLog: events also said on stderr as text (a no-op when the log is stderr)
	textLog zerolog.Logger
	stderr  io.Writer
}

// reach returns once a daemon answers on the socket. It waits up to wait for
// one to come back, then starts one.
func (r *reacher) reach(ctx context.Context, wait time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitSocket(ctx, wait) == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(r.stderr, "no bridge daemon answers on %s: starting one, as `bridgectl start` does; it keeps running after this session, `bridgectl stop` ends it\n", r.sock)
	r.textLog.Info().Str("socket", r.sock).Msg("no daemon answers: starting one")
	startErr := r.start(ctx)
	if startErr != nil {
		// Another host's bridge stdio may be starting one at the same
		// moment: it holds the state dir's lock; wait for its socket.
		if holder, err := r.c.Dir.LockHolder(); err == nil && holder != 0 {
			r.log.Info().Int("pid", holder).Msg("another daemon holds the state dir: waiting for its socket")
			if err := r.waitSocket(ctx, startWait); err != nil {
				return fmt.Errorf("a daemon (pid %d) runs for state dir %s but does not answer on %s (%v): see `bridgectl status` and `bridgectl logs`", holder, r.c.Dir.Root, r.sock, err)
			}
			return nil
		}
	}
	if mcpsock.Ping(ctx, r.sock) == nil {
		return nil
	}
	if startErr != nil {
		return fmt.Errorf("no daemon runs for state dir %s and starting one failed: %w", r.c.Dir.Root, startErr)
	}
	return fmt.Errorf("the daemon started but does not answer on %s: see `bridgectl logs`", r.sock)
}

// waitSocket returns nil once a daemon answers on the socket, polling for up
// to wait (no event says when a starting or reloading daemon is there).
func (r *reacher) waitSocket(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := mcpsock.Ping(ctx, r.sock)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// start starts the daemon as `bridgectl start` does: refused while disabled
// or while one runs, on a surviving tunnel's port, its log's last lines
// shown when it fails.
func (r *reacher) start(ctx context.Context) error {
	if err := r.c.ReadyToStart(ctx); err != nil {
		return err
	}
	pin := r.c.PortForTunnel()
	st, err := r.c.Start(ctx, StartOptions{PinPort: pin, JustFreed: pin > 0})
	var se *StartError
	if errors.As(err, &se) {
		for _, l := range se.Tail {
			fmt.Fprintf(r.stderr, "  | %s\n", termtext.Line(l, 4<<10))
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(r.stderr, "daemon started: pid %d, listening on http://%s\n", st.PID, st.Addr)
	r.textLog.Info().Int("pid", st.PID).Str("addr", st.Addr).Msg("daemon started")
	return nil
}

// prefixed writes each line with prefix in front: the notes of a start
// reach the host's log as the lines of `bridge stdio`.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix+l); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/logging"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// reachWait is how long `bridge stdio` waits for a daemon that stopped
// mid-session (a `bridgectl reload`) to come back before starting one.
const reachWait = 15 * time.Second

// startWait is how long `bridge stdio` waits for a daemon another host's
// `bridge stdio` is starting at the same moment (bridgectl start's own bound).
const startWait = 30 * time.Second

// runStdio forwards the host's MCP session to the daemon of the state dir
// over its unix socket, so the host gets every tool and jobs belong to the
// daemon (they outlive the session). With no daemon running it starts one
// the way `bridgectl start` does — by running it.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bridge stdio", flag.ContinueOnError)
	envFile := fs.String("env", "", "the .env file to read")
	if code, ok := parseFlags(fs, args, stdioUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bridge stdio: unexpected arguments %q\n\n%s", fs.Args(), stdioUsage)
		return exitConfig
	}
	cfg, err := config.Load(*envFile)
	if err != nil {
		fmt.Fprintf(stderr, "bridge stdio: %v\n", err)
		return exitConfig
	}
	log, closer, err := logging.New(logging.Options{File: cfg.LogFile, Level: cfg.LogLevel, Stderr: stderr, Secrets: cfg.Secrets()})
	if err != nil {
		fmt.Fprintf(stderr, "bridge stdio: %v\n", err)
		return exitConfig
	}
	defer closer.Close()
	log = log.With().Str("cmd", "stdio").Logger()
	if cfg.IgnoredLocalEnv != "" {
		fmt.Fprintf(stderr, "bridge stdio: note: %s\n", config.LocalEnvNote(cfg.IgnoredLocalEnv, config.ResolveEnvFile(*envFile, os.LookupEnv)))
	}
	r := &reacher{cfg: cfg, sock: statedir.Dir{Root: cfg.StateDir}.SocketFile(), log: log, stderr: stderr}
	if err := r.reach(ctx, 0); err != nil {
		fmt.Fprintf(stderr, "bridge stdio: %v\n", err)
		log.Error().Err(err).Msg("no daemon to forward to")
		return exitFail
	}
	log.Info().Str("socket", r.sock).Msg("forwarding MCP from stdio to the daemon")
	err = mcpsock.Forward(ctx, mcpsock.Options{Socket: r.sock, Log: log, Redial: func(ctx context.Context) error { return r.reach(ctx, reachWait) }}, stdin, stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stdio")
		return exitFail
	}
	return exitOK
}

// reacher finds the daemon's socket, and starts the daemon when none answers.
type reacher struct {
	mu     sync.Mutex // one reach at a time: calls that fail together wait for one restart
	cfg    config.Config
	sock   string
	log    zerolog.Logger
	stderr io.Writer
}

// reach returns once a daemon answers on the socket. It waits up to wait for
// one to come back, then starts one with `bridgectl start`.
func (r *reacher) reach(ctx context.Context, wait time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitSocket(ctx, wait) == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(r.stderr, "bridge stdio: no bridge daemon answers on %s: starting one (`bridgectl start`); it keeps running after this session, `bridgectl stop` ends it\n", r.sock)
	r.log.Info().Str("socket", r.sock).Msg("no daemon answers: starting one with bridgectl start")
	startErr := r.start(ctx)
	if startErr != nil {
		// Another host's bridge stdio may be starting one at the same
		// moment: it holds the state dir's lock; wait for its socket.
		if holder, err := (statedir.Dir{Root: r.cfg.StateDir}).LockHolder(); err == nil && holder != 0 {
			r.log.Info().Int("pid", holder).Msg("another daemon holds the state dir: waiting for its socket")
			if err := r.waitSocket(ctx, startWait); err != nil {
				return fmt.Errorf("a daemon (pid %d) runs for state dir %s but does not answer on %s (%v): see `bridgectl status` and `bridgectl logs`", holder, r.cfg.StateDir, r.sock, err)
			}
			return nil
		}
	}
	if mcpsock.Ping(ctx, r.sock) == nil {
		return nil
	}
	if startErr != nil {
		return fmt.Errorf("no daemon runs for state dir %s and starting one failed: %w", r.cfg.StateDir, startErr)
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

// start runs `bridgectl start` with this bridge binary (BRIDGE_BIN) and this
// .env; its output goes to stderr, never to the host's stdout.
func (r *reacher) start(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctl, err := findCtl(self)
	if err != nil {
		return err
	}
	args := []string{}
	if r.cfg.EnvFile != "" {
		args = append(args, "--env", r.cfg.EnvFile)
	}
	args = append(args, "start", "--for", "bridge stdio pid "+strconv.Itoa(os.Getpid()))
	cmd := exec.CommandContext(ctx, ctl, args...)
	cmd.Env = append(os.Environ(), "BRIDGE_BIN="+self)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			fmt.Fprintf(r.stderr, "bridge stdio: bridgectl: %s\n", l)
		}
	}
	if err != nil {
		return fmt.Errorf("%s start: %w", ctl, err)
	}
	r.log.Info().Msg("daemon started by bridgectl start")
	return nil
}

// findCtl is bridgectl next to this binary, else on PATH.
func findCtl(self string) (string, error) {
	p := filepath.Join(filepath.Dir(self), "bridgectl"+filepath.Ext(self))
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, nil
	}
	if p, err := exec.LookPath("bridgectl"); err == nil {
		return p, nil
	}
	return "", errors.New("bridgectl was not found next to bridge or on PATH: install both (make build writes bin/), or start the daemon yourself with `bridgectl start`")
}

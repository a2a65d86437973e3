// Package daemon is what `bridge serve` is: it holds the state dir's lock,
// runs the agent jobs (registry, guard, model proxy, approval watcher) and
// the MCP endpoint — over HTTP with the path secret, and over a unix socket
// in the state dir without it —, writes daemon.json while it listens, and
// stops it all in order on Close.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// Options are what the daemon takes besides its config.
type Options struct {
	Flash   tools.FlashClient // deepseek_flash's client
	Logger  zerolog.Logger
	Version string // shown by /health and in serverInfo
}

// Daemon is one `bridge serve`. Build it with New, start it with Run, and
// Close it once New succeeded, also when Run failed.
type Daemon struct {
	cfg    config.Config
	log    zerolog.Logger
	dir    statedir.Dir
	unlock func()
	agent  *agentJobs
	srv    *server.Server

	stopCtx context.Context // ends serving, the approval watcher and the debug endpoint
	stop    context.CancelFunc

	ln        net.Listener // bound by New, served by Run (nil once Run has it)
	addr      string
	socket    string        // the unix socket's path ("" when it could not be made)
	sockDone  chan struct{} // closed when serving the socket has ended (nil: not started)
	serving   bool          // Run started serving: done closes when it ends
	done      chan struct{} // closed when serving has ended
	serveErr  error         // why serving ended (nil: Close); read after done
	watchDone chan struct{} // closed when the approval watcher has returned (nil: not started)
	stopDebug func()        // nil: not started
	closeOnce sync.Once
}

// New builds the daemon without listening: it checks the path secret, takes
// the state dir's lock (before anything touches the state: jobs, approvals,
// the guard's flag) and builds the agent jobs and the server. It logs why it
// fails.
func New(cfg config.Config, o Options) (*Daemon, error) {
	d := &Daemon{cfg: cfg, log: o.Logger, done: make(chan struct{})}
	if err := cfg.CheckSecret(); err != nil {
		d.log.Error().Err(err).Msg("refusing to start")
		return nil, err
	}
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		d.log.Error().Err(err).Msg("refusing to start")
		return nil, err
	}
	d.dir = dir
	if d.unlock, err = lockStateDir(dir); err != nil {
		d.log.Error().Err(err).Msg("refusing to start")
		return nil, err
	}
	// Bind first: a taken port fails here, before the model proxy listens
	// and the log says agent jobs can run.
	var lc net.ListenConfig
	if d.ln, err = lc.Listen(context.Background(), "tcp", cfg.Addr()); err != nil {
		d.unlock()
		err = fmt.Errorf("listen on %s: %w", cfg.Addr(), err)
		d.log.Error().Err(err).Msg(cmp.Or(ListenHint(err, cfg), "refusing to start"))
		return nil, err
	}
	owner, err := writeOwnerToken(dir)
	if err != nil {
		d.log.Error().Err(err).Msg("refusing to start")
		d.ln.Close()
		d.unlock()
		return nil, err
	}
	if d.agent, err = newAgentJobs(cfg, d.log); err != nil {
		d.log.Error().Err(err).Msg("agent jobs")
		d.ln.Close()
		d.unlock()
		return nil, err
	}
	d.stopCtx, d.stop = context.WithCancel(context.Background())
	d.srv, err = server.New(server.Options{Config: cfg, Flash: o.Flash, Jobs: d.agent.reg, Models: d.agent.models, Logger: d.log, Version: o.Version, OwnerToken: owner,
		ReloadSecret:  d.reloadSecret,
		HostApprovals: approvals.NewQueue(d.dir, d.log)})
	if err != nil {
		d.log.Error().Err(err).Msg("build server")
		_ = d.Close(context.Background())
		return nil, err
	}
	return d, nil
}

// Run starts the approval watcher and the debug endpoint, serves on the
// address New bound (PORT=0 picks a free port), writes daemon.json and
// returns; serving goes on until Close, or until it fails (Done). Call Run
// once.
func (d *Daemon) Run(ctx context.Context) error {
	d.watchDone = make(chan struct{})
	go func() { // owner: Daemon; joined by Close
		defer close(d.watchDone)
		approvals.Watch(d.stopCtx, d.agent.guard.Queue(), approvalSink{d.agent.reg})
	}()
	// Loopback-only pprof and goroutine count for `make bench`; off unless set.
	d.stopDebug = server.ServeDebug(d.stopCtx, d.cfg.DebugAddr, d.log)

	ln := d.ln
	d.ln = nil
	d.addr = ln.Addr().String()
	d.serveSocket()
	if err := d.writeInfo(); err != nil {
		ln.Close()
		return err
	}
	d.serving = true
	go func() { // owner: Daemon; joined by Close
		err := d.srv.Serve(d.stopCtx, ln)
		d.removeInfo()
		d.serveErr = err
		close(d.done)
	}()
	return nil
}

// Socket is the unix socket's path ("" before Run, or when it could not be made).
func (d *Daemon) Socket() string { return d.socket }

// Addr is the address the daemon listens on ("" before Run).
func (d *Daemon) Addr() string { return d.addr }

// Done is closed when serving has ended: after Close, or when the HTTP
// server failed (Close then returns why).
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Close stops the daemon: the approval service, the HTTP server (in-flight calls get
// server.DefaultShutdownTimeout), then the job registry — whose jobs are
// interrupted alongside that drain, so calls waiting on a job return before
// its deadline —, the approval watcher and the model proxy, which outlives
// the jobs because their close still settles each job's token. daemon.json
// goes as soon as serving ends. ctx bounds stopping the jobs and the proxy.
// It returns the error that ended serving, if it was not Close.
func (d *Daemon) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		d.stop()
		// Before the jobs stop: a tool call still waiting for a human is
		// recorded as unanswered because the bridge stopped, not as a
		// cancel of its job.
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := d.agent.guard.Close(actx); err != nil {
			d.log.Warn().Err(err).Msg("stopping the approval service")
		}
		cancel()
		jobsClosed := make(chan struct{})
		go func() { // owner: Close; joined below
			defer close(jobsClosed)
			closeRegistry(ctx, d.agent.reg, d.log)
		}()
		if d.serving {
			<-d.done
		} else {
			close(d.done)
		}
		if d.sockDone != nil {
			<-d.sockDone
		}
		if d.stopDebug != nil {
			d.stopDebug()
		}
		<-jobsClosed
		if d.watchDone != nil {
			<-d.watchDone
		}
		if d.ln != nil {
			d.ln.Close()
		}
		stopModelProxy(ctx, d.agent.proxy, d.log)
		d.removePIDFile()
		d.unlock()
	})
	return d.serveErr
}

// ListenHint is the next step after a listen error: for a taken port, how to
// find what holds it and how to pick another ("" for other errors).
func ListenHint(err error, cfg config.Config) string {
	if !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") {
		return ""
	}
	return fmt.Sprintf("port %d on %s is taken: stop whatever listens there (`ss -ltnp 'sport = :%d'`; a bridge already running? `bridgectl status`); or %s", cfg.Port, cfg.Host, cfg.Port, cfg.PortAdvice(""))
}

// reloadSecret reads MCP_PATH_SECRET again from the .env the daemon started
// with (the environment still wins, as at start) for the socket's secret
// reload; a daemon started without a file keeps its secret.
func (d *Daemon) reloadSecret() (string, error) {
	if d.cfg.EnvFile == "" {
		return d.cfg.PathSecret, nil
	}
	cfg, err := config.Load(d.cfg.EnvFile)
	if err != nil {
		return "", err
	}
	if err := cfg.CheckSecret(); err != nil {
		return "", err
	}
	return cfg.PathSecret, nil
}

func (d *Daemon) writeInfo() error {
	harness := d.agent.info
	info := statedir.DaemonInfo{
		Version: statedir.FormatVersion, PID: os.Getpid(), Addr: d.addr,
		StartedAt: time.Now().UTC().Format(time.RFC3339),
		Harness:   &harness, Sandbox: string(d.agent.guard.SandboxMode()), Approval: string(d.agent.guard.ApprovalMode()),
		Record: d.agent.guard.RecordLine(),
		Path:   d.agent.path, PolicyFloor: cmp.Or(d.cfg.PolicyFloorFile, "none"),
		Socket: d.socket, SecretReload: d.socket != "", EnvFile: d.cfg.EnvFile,
		DeepSeekBaseURL: d.cfg.DeepSeekBaseURL, DeepSeekBaseURLFrom: cmp.Or(d.cfg.Origin("DEEPSEEK_BASE_URL"), "default"),
		AllowedRoots: append([]string{}, d.cfg.AllowedRoots...),
	}
	if self, err := statedir.Identify(os.Getpid()); err == nil {
		info.Exe, info.ProcStart = self.Exe, self.Start
	} else {
		d.log.Warn().Err(err).Msg("daemon.json without this process's start time: bridgectl relies on the state dir's lock alone")
	}
	return statedir.WriteJSON(d.dir.DaemonInfoFile(), info)
}

// removePIDFile removes bridge.pid when it names this process: `bridgectl
// start --foreground` writes it and then becomes the daemon, so nobody else
// is left to remove it when the daemon stops.
func (d *Daemon) removePIDFile() {
	b, err := os.ReadFile(d.dir.PIDFile())
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		return
	}
	if err := os.Remove(d.dir.PIDFile()); err != nil {
		d.log.Warn().Err(err).Msg("remove bridge.pid")
	}
}

func (d *Daemon) removeInfo() {
	if err := os.Remove(d.dir.DaemonInfoFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn().Err(err).Msg("remove daemon.json")
	}
}

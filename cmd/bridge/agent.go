package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/modelproxy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// jobsCloseTimeout bounds stopping every harness at shutdown (each gets
// harness.DefaultStopGrace between SIGTERM and SIGKILL).
const jobsCloseTimeout = harness.DefaultStopGrace + 5*time.Second

// harnessInfo is the "harness" entry of daemon.json.
type harnessInfo struct {
	Kind      string `json:"kind"`
	Bin       string `json:"bin,omitempty"`
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
	// ModelProxy is the loopback address of the model proxy the jobs call.
	ModelProxy string `json:"model_proxy,omitempty"`

	// guard is the approval and sandbox layer the registry was built with
	// (not part of daemon.json: runServe records its modes and runs its watcher).
	guard *guard
}

// lockStateDir takes the state dir's daemon lock for the life of `bridge
// serve`. A second daemon on the same state dir is refused before it reloads
// jobs (which would mark the live daemon's jobs interrupted and kill their
// processes) or resets the approval switch.
func lockStateDir(cfg config.Config) (unlock func(), err error) {
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	l, err := dir.Lock()
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}

// newAgentJobs builds the job registry of `bridge serve`: the Claude Code
// harness (binary: BRIDGE_CLAUDE_BIN, the pinned install, PATH) and the
// model proxy, which holds the key and gives each job its own token; stop the
// proxy (stopModelProxy) after the registry has closed. It logs whether agent
// jobs can run; a missing binary does not stop the daemon — each job then ends
// with the error that says how to install it —, and neither does a missing
// key: every job is then refused at start.
func newAgentJobs(cfg config.Config, log zerolog.Logger) (*jobs.Registry, *modelproxy.Proxy, harnessInfo, error) {
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		return nil, nil, harnessInfo{}, err
	}
	// A process a job orphans after leaving its group and marker (possible
	// with BRIDGE_SANDBOX=off) is re-parented to the daemon, which kills it
	// when a job ends (harness.ReapOrphans).
	if err := harness.BecomeSubreaper(); err != nil {
		log.Debug().Err(err).Msg("not a child subreaper: orphans that leave a job's process group and marker are not found")
	}
	var reg *jobs.Registry // assigned below; the callback runs only once jobs do
	mp, perr := startModelProxy(cfg, dir, &log, func(id, reason string) { reg.Abort(id, reason) })
	noKey := errors.Is(perr, modelproxy.ErrNoAPIKey)
	if perr != nil && !noKey {
		return nil, nil, harnessInfo{}, perr
	}
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	bin, lerr := harness.Locate(cfg.ClaudeBin, harness.PinnedPaths(exe, wd), exec.LookPath)
	info := harnessInfo{Kind: "claude-code", Bin: bin, Available: lerr == nil}
	g, err := newGuard(cfg, dir, exe, userHome(), func() error { return sandbox.Available("") }, log)
	if err != nil {
		stopModelProxy(mp, log)
		return nil, nil, info, err
	}
	info.guard = g
	if lerr == nil {
		g.harnessBin = bin // runs unsandboxed for every job: no workspace may hold it
	}
	switch {
	case noKey:
		info.Available, info.Error = false, errNoKeyForJobs.Error()
		log.Warn().Msg("agent jobs cannot run: DEEPSEEK_API_KEY is not set; every deepseek_agent_start is refused until you set it and restart")
	case lerr != nil:
		info.Error = lerr.Error()
		log.Warn().Err(lerr).Msg("agent jobs cannot run: no Claude Code binary")
	case g.sandboxErr != nil:
		info.Available, info.Error = false, g.sandboxErr.Error()
	case len(cfg.AllowedRoots) == 0:
		log.Warn().Str("claude", bin).Msg("agent jobs can run, but DEEPSEEK_ALLOWED_ROOTS is empty: every workspace is refused until you set it")
	default:
		log.Info().Str("claude", bin).Strs("roots", cfg.AllowedRoots).Msg("agent jobs can run")
	}
	var gw jobs.ModelGateway = refusingGateway{errNoKeyForJobs}
	var jg jobs.Guard = g
	if noKey {
		jg = refusingGuard{g}
	} else {
		gw = proxyGateway{mp}
		info.ModelProxy = strings.TrimPrefix(mp.URL(), "http://")
	}
	reg, err = jobs.New(jobs.Options{
		Dir:           dir,
		Harness:       &harness.ClaudeCode{Bin: bin, LookupErr: lerr, Environ: os.Environ(), NoRetries: true},
		Gateway:       gw,
		Guard:         jg,
		Model:         cfg.Model,
		MaxConcurrent: cfg.MaxConcurrent,
		MaxQueue:      cfg.MaxQueue,
		MaxSteps:      cfg.MaxSteps,
		JobTimeout:    cfg.JobTimeout,
		ResultTTL:     cfg.ResultTTL,
		Logger:        &log,
	})
	if err != nil {
		stopModelProxy(mp, log)
		return nil, nil, info, err
	}
	return reg, mp, info, nil
}

// closeJobsOnDone stops every job as interrupted as soon as ctx ends (so
// calls waiting on a job return before the HTTP shutdown deadline). The
// returned func waits for that to finish.
func closeJobsOnDone(ctx context.Context, reg *jobs.Registry, log zerolog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() { // owner: runServe; joined by wait
		defer close(done)
		<-ctx.Done()
		cctx, cancel := context.WithTimeout(context.Background(), jobsCloseTimeout)
		defer cancel()
		if err := reg.Close(cctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error().Err(err).Msg("stopping agent jobs")
		}
	}()
	return func() { <-done }
}

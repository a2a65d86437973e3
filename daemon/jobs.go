package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/guard"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/modelproxy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// jobsCloseTimeout bounds stopping every harness at shutdown (each gets
// harness.DefaultStopGrace between SIGTERM and SIGKILL).
const jobsCloseTimeout = harness.DefaultStopGrace + 5*time.Second

var _ jobs.Guard = (*guard.Guard)(nil)

// agentJobs is what runs the agent jobs of `bridge serve`.
type agentJobs struct {
	reg    *jobs.Registry
	proxy  *modelproxy.Proxy // nil without a key; stop it after the registry closed
	guard  *guard.Guard
	info   statedir.DaemonHarness // daemon.json "harness"
	path   string                 // the daemon's PATH (daemon.json "path")
	models deepseek.Catalog       // the models calls may name
}

// lockStateDir takes the state dir's daemon lock for the life of the daemon.
// A second daemon on the same state dir is refused before it reloads jobs
// (which would mark the live daemon's jobs interrupted and kill their
// processes) or resets the approval switch.
func lockStateDir(dir statedir.Dir) (unlock func(), err error) {
	l, err := dir.Lock()
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}

// newAgentJobs builds the job registry of `bridge serve`: the Claude Code
// harness (binary: BRIDGE_CLAUDE_BIN, the pinned install, PATH), the guard and
// the model proxy, which holds the key and gives each job its own token. It
// logs whether agent jobs can run; a missing binary does not stop the daemon —
// each job then ends with the error that says how to install it —, and
// neither does a missing key: every job is then refused at start.
func newAgentJobs(cfg config.Config, log zerolog.Logger) (*agentJobs, error) {
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	// A process a job orphans after leaving its group and marker (possible
	// with BRIDGE_SANDBOX=off) is re-parented to the daemon, which kills it
	// when a job ends (harness.ReapOrphans).
	if err := harness.BecomeSubreaper(); err != nil {
		log.Debug().Err(err).Msg("not a child subreaper: orphans that leave a job's process group and marker are not found")
	}
	models, err := Catalog(cfg)
	if err != nil {
		return nil, err
	}
	floor, err := loadFloor(cfg, log)
	if err != nil {
		return nil, err
	}
	a := &agentJobs{path: os.Getenv("PATH"), models: models}
	untrusted := untrustedDirs(cfg)
	warnDroppedPath(log, a.path, untrusted)
	mp, perr := startModelProxy(cfg, models, dir, &log, func(id string, f modelproxy.Fault) { a.reg.Abort(id, faultStop(f)) }) // called only once jobs run
	noKey := errors.Is(perr, modelproxy.ErrNoAPIKey)
	if perr != nil && !noKey {
		return nil, perr
	}
	a.proxy = mp
	exe, _ := os.Executable()
	// Claude Code runs outside the jail's view of itself: from PATH it is
	// looked up like bubblewrap, never in a dir a job can write.
	look := harness.TrustedLook(a.path, untrusted.dirs())
	bin, lerr := harness.Locate(cfg.ClaudeBin, harness.PinnedPaths(exe), look)
	if lerr == nil {
		// The real file: jobs' harnesses see only it (and its dir), not the
		// link that led to it.
		if real, err := filepath.EvalSymlinks(bin); err == nil {
			bin = real
		}
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	a.info = statedir.DaemonHarness{Kind: "claude-code", Bin: bin, Available: lerr == nil}
	harnessBin := "" // runs unsandboxed for every job: no workspace may hold it
	if lerr == nil {
		harnessBin = bin
	}
	trusted, _ := harness.TrustedPath(a.path, untrusted.dirs())
	g, err := guard.New(guard.Options{Config: cfg, Dir: dir, Exe: exe, HarnessBin: harnessBin, Home: userHome(), Look: look, TrustedPath: trusted, Logger: log})
	if err != nil {
		stopModelProxy(context.Background(), mp, log)
		return nil, err
	}
	a.guard = g
	switch {
	case noKey:
		a.info.Available, a.info.Error = false, errNoKeyForJobs.Error()
		log.Warn().Msg("agent jobs cannot run: DEEPSEEK_API_KEY is not set; every deepseek_agent_start is refused until you set it and restart")
	case lerr != nil:
		a.info.Error = lerr.Error()
		log.Warn().Err(lerr).Msg("agent jobs cannot run: no Claude Code binary")
	case g.SandboxErr() != nil:
		a.info.Available, a.info.Error = false, g.SandboxErr().Error()
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
		a.info.ModelProxy = strings.TrimPrefix(mp.URL(), "http://")
	}
	a.reg, err = jobs.New(jobs.Options{
		Dir:           dir,
		Harness:       claudeCode(bin, lerr, untrusted),
		Gateway:       gw,
		Guard:         jg,
		Model:         cfg.Model,
		Price:         models.PriceOf,
		MaxConcurrent: cfg.MaxConcurrent,
		MaxQueue:      cfg.MaxQueue,
		MaxSteps:      cfg.MaxSteps,
		JobTimeout:    cfg.JobTimeout,
		ResultTTL:     cfg.ResultTTL,
		Floor:         floor,
		FloorFile:     cfg.PolicyFloorFile,
		RequirePolicy: cfg.RequirePolicy,
		WorkspaceLock: cfg.WorkspaceLock,
		Logger:        &log,
	})
	if err != nil {
		stopModelProxy(context.Background(), mp, log)
		return nil, err
	}
	return a, nil
}

// claudeCode is the harness of every job. Its PATH leaves out what a job
// could write: it runs the programs found there (bwrap and socat of its
// sandbox among them) outside the sandbox.
func claudeCode(bin string, lerr error, untrusted untrustedList) *harness.ClaudeCode {
	return &harness.ClaudeCode{Bin: bin, LookupErr: lerr, Environ: os.Environ(), UntrustedDirs: untrusted.dirs(), NoRetries: true}
}

// untrustedDir is a directory a job may write, and what it is.
type untrustedDir struct{ dir, what string }

type untrustedList []untrustedDir

func (l untrustedList) dirs() []string {
	out := make([]string, len(l))
	for i, u := range l {
		out[i] = u.dir
	}
	return out
}

// untrustedDirs are the directories no PATH entry of the harness may lie
// in, besides each job's own workspace: every allowed root (a job may work
// in any of them), the state dir and the temp dirs.
func untrustedDirs(cfg config.Config) untrustedList {
	var out untrustedList
	add := func(dir, what string) {
		if dir == "" || slices.ContainsFunc(out, func(u untrustedDir) bool { return u.dir == dir }) {
			return
		}
		out = append(out, untrustedDir{dir, what})
	}
	for _, r := range cfg.AllowedRoots {
		add(r, "allowed root")
	}
	add(cfg.StateDir, "the state dir")
	for _, t := range []string{"/tmp", os.TempDir(), os.Getenv("TMPDIR")} {
		add(t, "the temp dir")
	}
	return out
}

// warnDroppedPath logs, once, each entry of the daemon's PATH that the
// harness does not get, and why: the owner should take it out of the PATH
// the daemon starts with, since the daemon and the owner's shell still run
// what is there.
func warnDroppedPath(log zerolog.Logger, path string, untrusted untrustedList) {
	_, dropped := harness.TrustedPath(path, untrusted.dirs())
	for _, d := range dropped {
		if d.Untrusted == "" {
			log.Warn().Str("entry", d.Entry).Msgf("PATH entry %q is left out of the harness's PATH: it is not absolute, so it would be looked up from the job's workspace", d.Entry)
			continue
		}
		where := d.Untrusted
		if i := slices.IndexFunc(untrusted, func(u untrustedDir) bool { return u.dir == d.Untrusted }); i >= 0 {
			where = untrusted[i].what + " " + d.Untrusted
		}
		if d.Via != "" {
			where += " (through " + d.Via + ")"
		}
		log.Warn().Str("entry", d.Entry).Str("untrusted", d.Untrusted).
			Msgf("PATH entry %s is left out of the harness's PATH: inside %s: a job could write a program there that the harness or its sandbox would run; take it out of the PATH the daemon starts with", d.Entry, where)
	}
}

// closeRegistry stops every job as interrupted (each harness gets its stop
// grace, within jobsCloseTimeout).
func closeRegistry(ctx context.Context, reg *jobs.Registry, log zerolog.Logger) {
	cctx, cancel := context.WithTimeout(ctx, jobsCloseTimeout)
	defer cancel()
	if err := reg.Close(cctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("stopping agent jobs")
	}
}

// userHome is the daemon's home directory, whose credential stores the OS
// sandbox hides from jobs ("" when unknown: only the state dir and .env are
// then denied by path).
func userHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

// jobLister is what the approval watcher's sink needs of the registry.
type jobLister interface {
	List() []jobs.Snapshot
	SetWaiting(id string, a *jobs.ApprovalInfo)
}

var _ jobLister = (*jobs.Registry)(nil)

// approvalSink shows the approval queue on the registry (approvals.Watch):
// a job is live while it runs or waits for a human.
type approvalSink struct{ reg jobLister }

var _ approvals.Sink = approvalSink{}

// LiveJobs lists the running and waiting jobs.
func (s approvalSink) LiveJobs() []approvals.LiveJob {
	var out []approvals.LiveJob
	for _, snap := range s.reg.List() {
		if snap.Status == jobs.StatusRunning || snap.Status == jobs.StatusWaitingApproval {
			out = append(out, approvals.LiveJob{ID: snap.ID, Waiting: snap.Status == jobs.StatusWaitingApproval})
		}
	}
	return out
}

// SetWaiting shows the request the job waits on (nil: running again).
func (s approvalSink) SetWaiting(jobID string, p *approvals.PendingRequest) {
	if p == nil {
		s.reg.SetWaiting(jobID, nil)
		return
	}
	s.reg.SetWaiting(jobID, &jobs.ApprovalInfo{ID: p.ID, Summary: p.Summary})
}

// faultStop is the stop of a job the model proxy ends: a crossed ceiling,
// or a model error with DeepSeek's class (the proxy's class names are the
// jobs' Model… names).
func faultStop(f modelproxy.Fault) jobs.Stop {
	switch f.Class {
	case modelproxy.FaultBudget:
		return jobs.Stop{Reason: jobs.StopBudgetCeiling, Text: f.Reason}
	case modelproxy.FaultDailyBudget:
		return jobs.Stop{Reason: jobs.StopDailyBudget, Text: f.Reason}
	}
	return jobs.Stop{Reason: jobs.StopModelError, Class: f.Class, Text: f.Reason}
}

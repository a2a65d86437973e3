// Package guard is the approval and OS-sandbox layer every agent job runs
// through: it admits a job's workspace, writes the job's harness files (the
// approval child's config, the MCP config that launches it, Claude Code's
// settings) so the job learns nothing it can change, and keeps the list of
// paths no job may reach. The job registry calls it as its jobs.Guard.
package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ApprovalMode is whether tool calls the rules send to a human wait for one
// ("on") or run ("off"); daemon.json records it.
type ApprovalMode string

// The approval modes (the strings of approvals.ModeOn and ModeOff).
const (
	ApprovalOn  ApprovalMode = approvals.ModeOn
	ApprovalOff ApprovalMode = approvals.ModeOff
)

// SandboxMode is whether jobs' commands run inside the OS sandbox;
// daemon.json records it.
type SandboxMode string

// The sandbox modes.
const (
	SandboxOn          SandboxMode = "on"
	SandboxOff         SandboxMode = "off"         // BRIDGE_SANDBOX=off
	SandboxUnavailable SandboxMode = "unavailable" // on, but it cannot run: every job is refused
)

// Options configure a Guard.
type Options struct {
	// Config gives the allowed roots, the daemon's .env, the allow list, the
	// approval timeout and the approval and sandbox switches.
	Config config.Config
	Dir    statedir.Dir
	// Exe is this bridge binary, which runs as every job's approval child.
	Exe string
	// HarnessBin is the Claude Code binary ("" when none was found).
	HarnessBin string
	// Home is the daemon's home, whose credential stores are denied ("" when unknown).
	Home string
	// SandboxAvailable checks the OS sandbox and returns the bubblewrap for
	// the jobs' jails (nil: sandbox.Available with Look); it is only called
	// when the sandbox is on.
	SandboxAvailable func() (string, error)
	// Look finds a program the bridge runs outside every sandbox
	// (bubblewrap, socat) on the daemon's PATH without the dirs a job can
	// write (nil: exec.LookPath). It finds git too, which the record of a
	// job's changes runs.
	Look func(name string) (string, error)
	// TrustedPath is the PATH git runs with: the daemon's without the dirs
	// a job can write (harness.TrustedPath; "": harness.DefaultPath).
	TrustedPath string
	// ProbeOverlay checks that a job's overlay mounts (nil:
	// sandbox.ProbeOverlay with Exe).
	ProbeOverlay func(exe, dir string) error
	// OnPending and OnDecided, when set, see each tool call the approval
	// service queues for a human and how it ended (prompt.Service).
	OnPending func(approvals.PendingRequest)
	OnDecided func(approvals.PendingRequest, approvals.Decision)
	Logger    zerolog.Logger
}

// Guard is the approval and sandbox layer of one daemon (see the package doc).
type Guard struct {
	dir        statedir.Dir
	exe        string // this bridge binary: the approval child
	harnessBin string // the Claude Code binary ("" when none was found)
	roots      []string
	envFile    string // the daemon's .env ("" when none)
	home       string // the daemon's home, for the credential stores to deny
	allow      []string
	timeout    time.Duration
	approval   bool           // BRIDGE_CC_APPROVAL
	sandbox    bool           // BRIDGE_SANDBOX
	sandboxErr error          // why the sandbox cannot run (nil: it can)
	bwrap      string         // bubblewrap for the jail ("" when the sandbox is off or unavailable, or not Linux)
	overlayErr error          // why jobs cannot write into an overlay (nil: they do)
	overlay    bool           // BRIDGE_OVERLAY
	runtime    []string       // BRIDGE_RUNTIME_ROOTS, resolved: read-only in every job's jail
	git        changes.Git    // the git the record of a job's changes runs (its Bin "" when none was found)
	limits     harness.Limits // every job's own bounds (BRIDGE_JOB_MAX_*), without its paths
	queue      *approvals.Queue
	service    *prompt.Service // the approval service every job's child asks
	log        zerolog.Logger
}

// New builds the guard of `bridge serve`. It clears the approval-off flag (a
// flag outlives no boot) and denies the approval requests a previous run left.
func New(o Options) (*Guard, error) {
	cfg := o.Config
	g := &Guard{
		dir: o.Dir, exe: o.Exe, harnessBin: o.HarnessBin, roots: cfg.AllowedRoots, envFile: cfg.EnvFile, home: o.Home,
		allow: cfg.ApproveAllow, timeout: cfg.ApprovalTimeout,
		approval: cfg.CCApproval, sandbox: cfg.Sandbox, overlay: cfg.Overlay,
		limits: harness.Limits{Processes: cfg.JobMaxProcesses, Memory: int64(cfg.JobMaxMemoryMB) << 20, Disk: int64(cfg.JobMaxDiskMB) << 20},
		log:    o.Logger.With().Str("component", "guard").Logger(),
	}
	look := o.Look
	if look == nil {
		look = exec.LookPath
	}
	available := o.SandboxAvailable
	if available == nil {
		available = func() (string, error) { return sandbox.Available(look) }
	}
	g.git.Path = o.TrustedPath
	if g.git.Path == "" {
		g.git.Path = harness.DefaultPath
	}
	if bin, err := look("git"); err == nil {
		g.git.Bin = bin
	} else {
		g.log.Info().Err(err).Msg("no git on the daemon's PATH outside the dirs a job can write: the changes of a job in a git work tree are recorded from copies alone")
	}
	rr, err := checkRuntimeRoots(cfg, g.dir.Root, g.home)
	if err != nil {
		return nil, err
	}
	g.runtime = rr
	if err := approvals.ClearApprovalOff(g.dir); err != nil {
		return nil, fmt.Errorf("clear the approval-off flag: %w", err)
	}
	g.queue = approvals.NewQueue(g.dir, g.log)
	// No approval child of a previous run can still be waiting: deny what it
	// left, so `bridgectl pending` never shows a request nobody waits for.
	if n, err := g.queue.CancelAll("the bridge restarted; the job that asked is gone"); err != nil {
		g.log.Warn().Err(err).Msg("deny the approval requests of the previous run")
	} else if n > 0 {
		g.log.Info().Int("requests", n).Msg("denied the approval requests of the previous run")
	}
	g.service = prompt.NewService(g.dir, o.Logger)
	g.service.Notify, g.service.Decided = o.OnPending, o.OnDecided
	if err := g.service.Listen(); err != nil {
		return nil, err
	}
	if !g.approval {
		g.log.Warn().Msg("HUMAN APPROVAL IS OFF (BRIDGE_CC_APPROVAL=off): agent jobs run every tool call the rules would send to a human; only the OS sandbox and the protected-path denials still apply")
	}
	switch {
	case !g.sandbox:
		g.log.Warn().Msg("OS SANDBOX IS OFF (BRIDGE_SANDBOX=off): agent jobs' commands run without bubblewrap and can read and write anything this user can once approved")
	default:
		bw, err := available()
		if err != nil {
			g.sandboxErr = err
			g.log.Error().Err(err).Msg("agent jobs are refused: the OS sandbox cannot run")
			break
		}
		if runtime.GOOS == "linux" {
			g.bwrap = bw
		}
	}
	g.overlayErr = g.probeOverlay(o.ProbeOverlay)
	return g, nil
}

// probeOverlay says why jobs cannot write into an overlay (nil: they can):
// only a jailed job does, where the overlay mounts (sandbox.ProbeOverlay).
func (g *Guard) probeOverlay(probe func(exe, dir string) error) error {
	if g.bwrap == "" {
		err := errors.New("no jail (the OS sandbox is off or cannot run here)")
		g.log.Warn().Err(err).Msg("jobs write straight into their workspaces: the record of their changes is a walk of the workspace, which may miss some")
		return err
	}
	if !g.overlay {
		err := errors.New("BRIDGE_OVERLAY=off")
		g.log.Warn().Err(err).Msg("jobs write straight into their workspaces: the record of their changes is a walk of the workspace, which may miss some")
		return err
	}
	if probe == nil {
		probe = sandbox.ProbeOverlay
	}
	if err := os.MkdirAll(g.dir.Root, 0o700); err != nil {
		return err
	}
	start := time.Now()
	if err := probe(g.exe, g.dir.Root); err != nil {
		g.log.Warn().Err(err).Msg("no overlay can be mounted here: jobs write straight into their workspaces, and the record of their changes is a walk of the workspace, which may miss some")
		return err
	}
	g.log.Info().Dur("took", time.Since(start)).Msg("jobs write into overlays: each job's record is exactly what it wrote")
	return nil
}

// RecordMode says how jobs' changes are recorded: "overlay" (exact), or
// "walk" with why no overlay can be had.
func (g *Guard) RecordMode() (mode string, why error) {
	if g.overlayErr != nil {
		return RecordWalk, g.overlayErr
	}
	return RecordOverlay, nil
}

// RecordLine is RecordMode for a person: "exact (overlay)" or "walk: why".
func (g *Guard) RecordLine() string {
	if mode, why := g.RecordMode(); mode == RecordWalk {
		return "walk (the record can miss changes): " + why.Error()
	}
	return "exact (each job writes into an overlay of its workspace)"
}

// The record modes (RecordMode).
const (
	RecordOverlay = "overlay"
	RecordWalk    = "walk"
)

// Close stops the approval service: a tool call still waiting for a human
// is recorded as unanswered (the bridge stopped), and its harness gets a
// deny. Call it before the jobs are stopped, so that is what they record.
func (g *Guard) Close(ctx context.Context) error {
	if g == nil || g.service == nil {
		return nil
	}
	return g.service.Close(ctx)
}

// ApprovalService is the daemon's approval service (for tests and the
// in-host approvals).
func (g *Guard) ApprovalService() *prompt.Service { return g.service }

// Queue is the approval queue of the guard's state dir (for the watcher,
// approvals.Watch).
func (g *Guard) Queue() *approvals.Queue { return g.queue }

// SandboxErr says why the OS sandbox cannot run (nil: it can, or it is off).
func (g *Guard) SandboxErr() error { return g.sandboxErr }

// ApprovalMode is the mode right now (the flag bridgectl writes counts).
func (g *Guard) ApprovalMode() ApprovalMode {
	if !g.approval || approvals.ApprovalOff(g.dir) {
		return ApprovalOff
	}
	return ApprovalOn
}

// SandboxMode is on, off or unavailable.
func (g *Guard) SandboxMode() SandboxMode {
	switch {
	case !g.sandbox:
		return SandboxOff
	case g.sandboxErr != nil:
		return SandboxUnavailable
	}
	return SandboxOn
}

// protected are the paths a workspace must not overlap and sandboxed
// commands must not write (protectedPaths).
func (g *Guard) protected() []string {
	return protectedPaths(g.dir.Root, g.envFile, g.exe, g.harnessBin)
}

// Admit is the registry's workspace check: refused while the sandbox is on
// but cannot run, else sandbox.AdmitWorkspace against the allowed roots and
// the protected paths.
func (g *Guard) Admit(dir string) (string, error) {
	if g.sandboxErr != nil {
		return "", fmt.Errorf("agent jobs are refused because the OS sandbox cannot run: %w", g.sandboxErr)
	}
	ws, err := sandbox.AdmitWorkspace(g.roots, dir, g.protected()...)
	if oe := (*sandbox.OverlapError)(nil); errors.As(err, &oe) {
		return "", fmt.Errorf("%w: %w (%s)", sandbox.ErrWorkspace, err, g.whatIs(oe.Protected))
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", sandbox.ErrWorkspace, err)
	}
	return ws, nil
}

// whatIs names a protected path for a person.
func (g *Guard) whatIs(p string) string {
	switch p {
	case g.dir.Root:
		return "the bridge's state dir, BRIDGE_STATE_DIR"
	case g.envFile:
		return "the daemon's .env file"
	case g.exe:
		return "the bridge binary itself, which runs every job's approval child outside the sandbox"
	case g.harnessBin:
		return "the Claude Code binary, which runs every job outside the sandbox"
	}
	return "a protected path"
}

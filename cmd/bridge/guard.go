package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Files of one job's harness dir (statedir HarnessDir) written by the guard.
const (
	approvalConfigFile = "approval.json"
	mcpConfigFile      = "mcp-config.json"
	settingsFile       = "settings.json"
)

// approvalWatchInterval is how often the daemon looks for requests waiting
// for a human (the queue lives in files the approval children write).
const approvalWatchInterval = 250 * time.Millisecond

// approvalKeep is how long decided and expired requests stay in the queue
// dir (the audit log keeps their history); they are pruned at boot and then
// once per approvalKeep.
const approvalKeep = time.Hour

// Modes recorded in daemon.json.
const (
	modeOn          = "on"
	modeOff         = "off"
	modeUnavailable = "unavailable"
)

// guard is the approval and OS-sandbox layer of agent jobs: it admits a
// workspace, writes each job's harness files (the approval child's config, the
// MCP config that launches it, Claude Code's settings) so the job learns
// nothing it can change, and shows a job waiting for a human.
var _ jobs.Guard = (*guard)(nil)

type guard struct {
	dir        statedir.Dir
	exe        string // this bridge binary: the approval child
	harnessBin string // the Claude Code binary ("" when none was found)
	roots      []string
	envFile    string // the daemon's .env ("" when none)
	home       string // the daemon's home, for the credential stores to deny
	allow      []string
	timeout    time.Duration
	approval   bool  // BRIDGE_CC_APPROVAL
	sandbox    bool  // BRIDGE_SANDBOX
	sandboxErr error // why the sandbox cannot run (nil: it can)
	queue      *approvals.Queue
	log        zerolog.Logger
}

// newGuard builds the guard of `bridge serve`. available checks the OS
// sandbox (sandbox.Available in production); it is only called when the
// sandbox is on. It clears the approval-off flag: a flag outlives no boot.
func newGuard(cfg config.Config, dir statedir.Dir, exe, home string, available func() error, log zerolog.Logger) (*guard, error) {
	g := &guard{
		dir: dir, exe: exe, roots: cfg.AllowedRoots, envFile: cfg.EnvFile, home: home,
		allow: cfg.ApproveAllow, timeout: cfg.ApprovalTimeout,
		approval: cfg.CCApproval, sandbox: cfg.Sandbox,
		log: log.With().Str("component", "guard").Logger(),
	}
	if err := approvals.ClearApprovalOff(dir); err != nil {
		return nil, fmt.Errorf("clear the approval-off flag: %w", err)
	}
	g.queue = approvals.NewQueue(dir, g.log)
	// No approval child of a previous run can still be waiting: deny what it
	// left, so `bridgectl pending` never shows a request nobody waits for.
	if n, err := g.queue.CancelAll("the bridge restarted; the job that asked is gone"); err != nil {
		g.log.Warn().Err(err).Msg("deny the approval requests of the previous run")
	} else if n > 0 {
		g.log.Info().Int("requests", n).Msg("denied the approval requests of the previous run")
	}
	g.pruneApprovals(time.Now())
	if !g.approval {
		g.log.Warn().Msg("HUMAN APPROVAL IS OFF (BRIDGE_CC_APPROVAL=off): agent jobs run every tool call the rules would send to a human; only the OS sandbox and the protected-path denials still apply")
	}
	switch {
	case !g.sandbox:
		g.log.Warn().Msg("OS SANDBOX IS OFF (BRIDGE_SANDBOX=off): agent jobs' commands run without bubblewrap and can read and write anything this user can once approved")
	default:
		if err := available(); err != nil {
			g.sandboxErr = err
			g.log.Error().Err(err).Msg("agent jobs are refused: the OS sandbox cannot run")
		}
	}
	return g, nil
}

// approvalMode is "on" or "off" right now (the flag bridgectl writes counts).
func (g *guard) approvalMode() string {
	if !g.approval || approvals.ApprovalOff(g.dir) {
		return approvals.ModeOff
	}
	return approvals.ModeOn
}

// sandboxMode is "on", "off" or "unavailable".
func (g *guard) sandboxMode() string {
	switch {
	case !g.sandbox:
		return modeOff
	case g.sandboxErr != nil:
		return modeUnavailable
	}
	return modeOn
}

// denied are the paths no tool call of a job may name, whatever a human says
// and with approval off too: the state dir, the daemon's .env and the
// credential stores under the daemon's home. The OS sandbox hides the same
// paths from commands.
func (g *guard) denied() []string {
	return sandbox.DefaultDenyRead(g.home, g.dir.Root, g.envFile)
}

// protected are the paths a workspace must not overlap and sandboxed
// commands must not write: the state dir, the daemon's .env, and the two
// binaries that run outside the OS sandbox for every job — this bridge (the
// approval child) and Claude Code. A job that could replace either would run
// its own code unsandboxed at the next job (or approve its own requests).
func (g *guard) protected() []string {
	out := []string{g.dir.Root}
	for _, p := range []string{g.envFile, g.exe, g.harnessBin} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Admit is the registry's workspace check: refused while the sandbox is on
// but cannot run, else sandbox.AdmitWorkspace against the allowed roots and
// the protected paths.
func (g *guard) Admit(dir string) (string, error) {
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
func (g *guard) whatIs(p string) string {
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

// Prepare writes the job's harness files and points spec at them. The files
// live in the job's harness dir inside the state dir, which the job can
// neither read nor write; the approval child learns its job from them alone.
func (g *guard) Prepare(_ context.Context, spec *harness.Spec) error {
	if g.exe == "" || !filepath.IsAbs(g.exe) {
		return fmt.Errorf("cannot locate this bridge's own executable (%q) to run as the approval child", g.exe)
	}
	hd := g.dir.HarnessDir(spec.JobID)
	if err := os.MkdirAll(hd, 0o700); err != nil {
		return fmt.Errorf("harness dir: %w", err)
	}
	if err := os.Chmod(hd, 0o700); err != nil {
		return fmt.Errorf("harness dir: %w", err)
	}
	// The config's switch is fixed for the job; the flag file is read by the
	// child at every request, so `bridgectl approval on` takes effect at once.
	mode := approvals.ModeOn
	if !g.approval {
		mode = approvals.ModeOff
	}
	if g.approvalMode() == approvals.ModeOff {
		g.log.Warn().Str("job", spec.JobID).Msg("HUMAN APPROVAL IS OFF for this job (BRIDGE_CC_APPROVAL=off or `bridgectl approval off`): nothing waits for a human")
	}
	if !g.sandbox {
		g.log.Warn().Str("job", spec.JobID).Msg("OS SANDBOX IS OFF for this job (BRIDGE_SANDBOX=off)")
	}

	// The walk for the workspace's own secret files runs alongside the
	// approval config's fsync; only the settings need its answer.
	secrets := make(chan []string, 1)
	go func() { secrets <- g.workspaceSecrets(spec.JobID, spec.Workspace) }() // owner: prepare; joined below
	secretsJoined := false
	joinSecrets := func() []string {
		if secretsJoined {
			return nil
		}
		secretsJoined = true
		return <-secrets
	}
	defer joinSecrets()

	approvalPath := filepath.Join(hd, approvalConfigFile)
	pc := prompt.Config{
		JobID:        spec.JobID,
		Workspace:    spec.Workspace,
		StateDir:     g.dir.Root,
		Allow:        append([]string(nil), g.allow...),
		Protected:    g.denied(),
		Timeout:      g.timeout,
		ApprovalMode: mode,
	}
	// prompt.WriteConfig fsyncs; it runs alongside the other two
	// files, which are written without (they are rewritten for every job), so
	// the spawn waits for one fsync, not three.
	approvalErr := make(chan error, 1)
	go func() { approvalErr <- prompt.WriteConfig(approvalPath, pc) }() // owner: prepare; joined below
	joined := false
	join := func() error {
		if joined {
			return nil
		}
		joined = true
		if err := <-approvalErr; err != nil {
			return fmt.Errorf("approval config: %w", err)
		}
		return nil
	}
	defer join()

	mcp := map[string]any{"mcpServers": map[string]any{
		"bridge": map[string]any{
			"type":    "stdio",
			"command": g.exe,
			"args":    []string{"approval-prompt", "--config", approvalPath},
			"env":     map[string]string{},
		},
	}}
	mcpPath := filepath.Join(hd, mcpConfigFile)
	if err := writeJSON(mcpPath, mcp); err != nil {
		return fmt.Errorf("MCP config: %w", err)
	}

	var wsSecrets []string
	for _, p := range joinSecrets() {
		wsSecrets = append(wsSecrets, sandbox.LiteralPattern(p))
	}
	settings := sandbox.ClaudeSettings(sandbox.SettingsOptions{
		Sandbox:           g.sandbox,
		DenyRead:          append(g.denied(), wsSecrets...),
		DenyWrite:         g.protected(),
		HideFromFileTools: wsSecrets,
	})
	if !g.sandbox {
		delete(settings, "sandbox")
	}
	settingsPath := filepath.Join(hd, settingsFile)
	if err := writeJSON(settingsPath, settings); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := join(); err != nil {
		return err
	}

	spec.SettingsFile = settingsPath
	spec.MCPConfigFile = mcpPath
	spec.PermissionPromptTool = prompt.ToolFlag
	spec.PermissionMode = "default"
	spec.AllowedTools = []string{}
	return nil
}

// workspaceSecrets lists the workspace's own secret files (sandbox.WorkspaceSecrets)
// present at the job's start, for the job's settings to hide: from its
// commands through the OS sandbox's denyRead (when the sandbox is on), and
// from Claude Code's own file tools, which run outside the sandbox, through
// permission deny rules (always — with human approval off nothing else
// would stop a Read of the workspace's .env). It logs how many it found and
// what it could not look at, never what they hold; a walk that fails hides
// nothing more and says so.
func (g *guard) workspaceSecrets(jobID, ws string) []string {
	start := time.Now()
	scan, err := sandbox.WorkspaceSecrets(ws, sandbox.DefaultSecretScanLimit)
	log := g.log.With().Str("job", jobID).Logger()
	if err != nil {
		log.Warn().Err(err).Msg("could not look for the workspace's secret files: this job can read any .env in it")
		return nil
	}
	log.Info().Int("secret_files", len(scan.Paths)).Int("entries", scan.Visited).
		Dur("took", time.Since(start)).Msg("the workspace's secret files are hidden from the job")
	if scan.Truncated {
		log.Warn().Int("limit", sandbox.DefaultSecretScanLimit).Int("unlisted_dirs", scan.Unlisted).
			Msg("the workspace is too large to look through for secret files: directories past the limit were not listed, and a .env in them is readable by the job")
	}
	if len(scan.Unreadable) > 0 {
		log.Warn().Strs("dirs", scan.Unreadable).Msg("directories of the workspace could not be listed for secret files")
	}
	if len(scan.HardLinked) > 0 {
		log.Warn().Strs("files", scan.HardLinked).Msg("secret files of the workspace have other hard links, which stay readable by the job")
	}
	return scan.Paths
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFileAtomicNoSync(path, append(b, '\n'))
}

// waitingSetter is what the approval watcher needs of the job registry.
type waitingSetter interface {
	List() []jobs.Snapshot
	SetWaiting(id string, a *jobs.ApprovalInfo)
}

var _ waitingSetter = (*jobs.Registry)(nil)

// watchApprovals shows each live job's pending request (waiting_approval
// with its id and summary) and puts it back to running once decided; it ends
// the pending requests of jobs that are over (cancelled, failed, gone) in
// deny. It runs until ctx ends; the returned func waits for that.
func (g *guard) watchApprovals(ctx context.Context, reg waitingSetter) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owner: runServe; joined by wait
		defer wg.Done()
		shown := map[string]string{} // job id → request id shown
		t := time.NewTicker(approvalWatchInterval)
		defer t.Stop()
		lastPrune := time.Now()
		for {
			g.syncApprovals(reg, shown)
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if now.Sub(lastPrune) >= approvalKeep {
					g.pruneApprovals(now)
					lastPrune = now
				}
			}
		}
	}()
	return wg.Wait
}

// syncApprovals is one pass of the watcher.
func (g *guard) syncApprovals(reg waitingSetter, shown map[string]string) {
	pending, err := g.queue.Pending()
	if err != nil {
		g.log.Warn().Err(err).Msg("read the approval queue")
		return
	}
	first := map[string]approvals.PendingRequest{} // job id → its oldest pending request
	for _, p := range pending {
		if cur, ok := first[p.JobID]; !ok || p.Created.Before(cur.Created) {
			first[p.JobID] = p
		}
	}
	live := map[string]bool{}
	for _, s := range reg.List() {
		if s.Status != jobs.StatusRunning && s.Status != jobs.StatusWaitingApproval {
			continue
		}
		live[s.ID] = true
		p, waiting := first[s.ID]
		switch {
		case waiting && (s.Status != jobs.StatusWaitingApproval || shown[s.ID] != p.ID):
			reg.SetWaiting(s.ID, &jobs.ApprovalInfo{ID: p.ID, Summary: p.Summary})
			shown[s.ID] = p.ID
		case !waiting && s.Status == jobs.StatusWaitingApproval:
			reg.SetWaiting(s.ID, nil)
			delete(shown, s.ID)
		}
	}
	for id := range shown {
		if !live[id] {
			delete(shown, id)
		}
	}
	for jobID := range first {
		if live[jobID] {
			continue
		}
		// The job is over (or unknown): nobody is waiting for this answer,
		// and an approval must not outlive it.
		n, err := g.queue.CancelJob(jobID)
		if err != nil {
			g.log.Warn().Err(err).Str("job", jobID).Msg("deny the pending requests of an ended job")
		} else if n > 0 {
			g.log.Info().Str("job", jobID).Int("requests", n).Msg("denied the pending requests of an ended job")
		}
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

// pruneApprovals removes the files of requests decided or expired more than
// approvalKeep before now.
func (g *guard) pruneApprovals(now time.Time) {
	n, err := g.queue.Prune(now.Add(-approvalKeep))
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		g.log.Warn().Err(err).Msg("prune the approval queue")
	case n > 0:
		g.log.Debug().Int("requests", n).Msg("pruned decided approval requests")
	}
}

package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Files of one job's harness dir (statedir HarnessDir) written by the guard.
const (
	approvalConfigFile = "approval.json"
	mcpConfigFile      = "mcp-config.json"
	settingsFile       = "settings.json"
)

// Prepare writes the job's harness files and points spec at them, and
// registers the job with the approval service, which answers its tool calls
// from the plan's approval config, held in memory. The files live in the
// job's harness dir inside the state dir; the approval child learns from
// them only where the service is and the job's token.
// What they say is the job's plan (plan, planSettings); Prepare reads what
// the plan needs and writes what it decides.
func (g *Guard) Prepare(_ context.Context, spec *harness.Spec) (err error) {
	start := time.Now()
	defer func() {
		if err != nil {
			spec.CloseWrapFiles() // the jail's descriptors: no harness will inherit them
		}
	}()
	if g.exe == "" || !filepath.IsAbs(g.exe) {
		return fmt.Errorf("cannot locate this bridge's own executable (%q) to run as the approval child", g.exe)
	}
	in := g.planInputs(spec)
	p := plan(in)
	if err := os.MkdirAll(p.HarnessDir, 0o700); err != nil {
		return fmt.Errorf("harness dir: %w", err)
	}
	if err := os.Chmod(p.HarnessDir, 0o700); err != nil {
		return fmt.Errorf("harness dir: %w", err)
	}
	if g.ApprovalMode() == ApprovalOff {
		g.log.Warn().Str("job", spec.JobID).Msg("HUMAN APPROVAL IS OFF for this job (BRIDGE_CC_APPROVAL=off or `bridgectl approval off`): nothing waits for a human")
	}
	if !g.sandbox {
		g.log.Warn().Str("job", spec.JobID).Msg("OS SANDBOX IS OFF for this job (BRIDGE_SANDBOX=off)")
	}

	// What the spawn waits for runs side by side: the walks of the
	// workspace and, here meanwhile, the approval and MCP configs and the
	// jail, which the plan decides without a walk. Only the settings need
	// the walks' answers; they come last. No file here is fsynced: each is
	// written anew for its job and useless after a power loss, which ends
	// the job. Each stage's time goes into one log line.
	walks := g.startWalks(spec, p)
	t := time.Now()
	cfgErr := g.writeConfigs(spec, p)
	cfgFiles := time.Since(t)
	w, walkErr := walks.wait()
	if cfgErr != nil {
		return cfgErr
	}
	if walkErr != nil {
		return walkErr
	}
	if err := writeJSON(p.SettingsFile, planSettings(in, w).settings()); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	spec.SettingsFile = p.SettingsFile
	spec.MCPConfigFile = p.MCPFile
	spec.PermissionPromptTool = prompt.ToolFlag
	spec.PermissionMode = "default"
	spec.AllowedTools = []string{}
	spec.Limits = g.jobLimits(spec, p)
	g.log.Info().Str("job", spec.JobID).Dur("secret_walk", walks.secretWalk).Dur("start_record", walks.startRecord).Dur("runs_later_scan", walks.runsLater).
		Dur("config_files", cfgFiles).Dur("prepare", time.Since(start)).
		Msg("harness files written (the walks beside the config files and the jail)")
	return nil
}

// jobLimits are the job's own bounds, its disk being what it writes outside
// the workspace (its harness dir: its HOME, its session, its /tmp) and, in
// an overlay, its upper dir, where each of its changes to the workspace is.
func (g *Guard) jobLimits(spec *harness.Spec, p jobPlan) harness.Limits {
	l := g.limits
	l.DiskPaths = []string{spec.ConfigDir}
	if p.overlay() {
		l.DiskPaths = append(l.DiskPaths, changes.OverlayOf(g.dir.ChangesDir(spec.JobID), spec.Workspace).Upper)
	}
	return l
}

// planInputs are the guard's settings and the job's spec, and the
// credential stores that exist when the job runs in a jail.
func (g *Guard) planInputs(spec *harness.Spec) planInputs {
	in := planInputs{
		Dir: g.dir, Exe: g.exe, HarnessBin: g.harnessBin, EnvFile: g.envFile, Home: g.home,
		Allow: g.allow, Timeout: g.timeout, Approval: g.approval, Sandbox: g.sandbox,
		Bwrap: g.bwrap, Runtime: g.runtime, Overlay: g.overlayErr == nil,
		JobID: spec.JobID, Workspace: spec.Workspace, ConfigDir: spec.ConfigDir, Policy: spec.Policy,
	}
	if g.bwrap != "" {
		in.Stores = existingStores(g.home)
	}
	return in
}

// writeConfigs writes the approval and MCP configs and builds the jail.
func (g *Guard) writeConfigs(spec *harness.Spec, p jobPlan) error {
	if err := os.MkdirAll(g.dir.LedgerDir(spec.JobID), 0o700); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	child, err := g.service.Register(p.Approval)
	if err != nil {
		return fmt.Errorf("approval service: %w", err)
	}
	if err := prompt.WriteChildConfig(p.ApprovalFile, child); err != nil {
		return fmt.Errorf("approval config: %w", err)
	}
	if err := writeJSON(p.MCPFile, p.MCP); err != nil {
		return fmt.Errorf("MCP config: %w", err)
	}
	if p.Jail == nil {
		return nil
	}
	spec.Wrap, err = g.jail(spec, p.Jail)
	return err
}

// jobWalks are the two walks of a job's workspace at its start, which run
// side by side: the walk for the workspace's own secret files, which also
// lists its files for the record of the job's start its changes are
// compared with (package changes), and the record of what runs later (for
// the audit at the job's end; the plan denies its paths to writes).
type jobWalks struct {
	wg                                 sync.WaitGroup
	found                              walked
	scanErr, recordErr                 error
	secretWalk, startRecord, runsLater time.Duration
}

// startWalks starts the walks of the job's workspace.
func (g *Guard) startWalks(spec *harness.Spec, p jobPlan) *jobWalks {
	ws := &jobWalks{}
	ws.wg.Go(func() {
		t := time.Now()
		scan, err := g.workspaceScan(spec.JobID, spec.Workspace)
		ws.found.Secrets = scan.Paths
		files := make([]string, len(scan.Files))
		for i, f := range scan.Files {
			files[i] = f.Path
		}
		ws.found.Globs = expandDenyGlobs(spec.Workspace, spec.Policy, files)
		ws.secretWalk = time.Since(t)
		if p.overlay() {
			return // the overlay records the job's changes exactly, with no walk
		}
		// Without an overlay the record has its own walk, which enters
		// every folder (the secret walk skips dependency and cache dirs).
		t = time.Now()
		if err == nil {
			scan, err = sandbox.WorkspaceRecordScan(spec.Workspace, 0)
		}
		ws.recordErr = g.recordStart(spec.JobID, spec.Workspace, p.RecordDeny, scan, err)
		ws.startRecord = time.Since(t)
	})
	if p.overlay() {
		return ws // nothing the job writes reaches the workspace unseen: no runs-later scan
	}
	ws.wg.Go(func() {
		t := time.Now()
		ws.found.RunsLater, ws.scanErr = g.baseline(spec.JobID, spec.Workspace, p.RunsLaterFile)
		ws.runsLater = time.Since(t)
	})
	return ws
}

// wait returns what the walks found once both are done.
func (ws *jobWalks) wait() (walked, error) {
	ws.wg.Wait()
	switch {
	case ws.scanErr != nil:
		return walked{}, fmt.Errorf("record what in the workspace runs later: %w", ws.scanErr)
	case ws.recordErr != nil:
		return walked{}, ws.recordErr
	}
	return ws.found, nil
}

// workspaceScan lists the workspace's own secret files (sandbox.WorkspaceSecrets)
// present at the job's start, for the job's settings to hide: from its
// commands through the OS sandbox's denyRead (when the sandbox is on), and
// from Claude Code's own file tools, which run outside the sandbox, through
// permission deny rules (always — with human approval off nothing else
// would stop a Read of the workspace's .env). It logs how many it found and
// what it could not look at, never what they hold; a walk that fails hides
// nothing more and says so.
func (g *Guard) workspaceScan(jobID, ws string) (sandbox.SecretScan, error) {
	start := time.Now()
	scan, err := sandbox.WorkspaceScan(ws, sandbox.DefaultSecretScanLimit, true)
	log := g.log.With().Str("job", jobID).Logger()
	if err != nil {
		log.Warn().Err(err).Msg("could not look for the workspace's secret files: this job can read any .env in it")
		return sandbox.SecretScan{}, err
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
	return scan, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFileAtomicNoSync(path, append(b, '\n'))
}

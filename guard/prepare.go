package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
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

// Prepare writes the job's harness files and points spec at them. The files
// live in the job's harness dir inside the state dir, which the job can
// neither read nor write; the approval child learns its job from them alone.
func (g *Guard) Prepare(_ context.Context, spec *harness.Spec) error {
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
	if g.ApprovalMode() == ApprovalOff {
		g.log.Warn().Str("job", spec.JobID).Msg("HUMAN APPROVAL IS OFF for this job (BRIDGE_CC_APPROVAL=off or `bridgectl approval off`): nothing waits for a human")
	}
	if !g.sandbox {
		g.log.Warn().Str("job", spec.JobID).Msg("OS SANDBOX IS OFF for this job (BRIDGE_SANDBOX=off)")
	}

	// The walk for the workspace's own secret files runs alongside the
	// approval config's fsync; only the settings need its answer.
	// The same walk lists the workspace's files: the record of the job's
	// start its changes are compared with (package changes), taken before
	// the harness starts.
	secrets := make(chan []string, 1)
	recorded := make(chan error, 1)
	go func() { // owner: Prepare; joined below (secrets first, then recorded)
		scan, err := g.workspaceScan(spec.JobID, spec.Workspace)
		secrets <- scan.Paths
		recorded <- g.recordStart(spec.JobID, spec.Workspace, scan, err)
	}()
	recordJoined := false
	joinRecord := func() error {
		if recordJoined {
			return nil
		}
		recordJoined = true
		return <-recorded
	}
	secretsJoined := false
	joinSecrets := func() []string {
		if secretsJoined {
			return nil
		}
		secretsJoined = true
		return <-secrets
	}
	defer joinRecord()
	defer joinSecrets()

	// The record of what runs later, for the audit at the job's end, is
	// taken before the harness starts; its paths are also denied to writes.
	type scanned struct {
		scan sandbox.RunsLaterScan
		err  error
	}
	baseline := make(chan scanned, 1)
	go func() { // owner: Prepare; joined below
		s, err := g.baseline(spec.JobID, spec.Workspace)
		baseline <- scanned{s, err}
	}()
	baseJoined := false
	joinBaseline := func() scanned {
		if baseJoined {
			return scanned{}
		}
		baseJoined = true
		return <-baseline
	}
	defer joinBaseline()

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
	go func() { approvalErr <- prompt.WriteConfig(approvalPath, pc) }() // owner: Prepare; joined below
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
	base := joinBaseline()
	if base.err != nil {
		return fmt.Errorf("record what in the workspace runs later: %w", base.err)
	}
	settings := sandbox.ClaudeSettings(sandbox.SettingsOptions{
		Sandbox:           g.sandbox,
		DenyRead:          append(g.denied(), wsSecrets...),
		DenyWrite:         append(g.protected(), runsLaterDenies(spec.Workspace, base.scan)...),
		HideFromFileTools: wsSecrets,
		// The jail shows the host's /proc (its own nested sandbox needs one
		// nothing is mounted over): the daemon's environment is in it.
		HideDirsFromFileTools: []string{"/proc", "/sys"},
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

	if err := joinRecord(); err != nil {
		return err
	}

	if g.bwrap != "" {
		wrap, err := g.jail(spec, []string{approvalPath, mcpPath, settingsPath, filepath.Join(hd, baselineFile)})
		if err != nil {
			return err
		}
		spec.Wrap = wrap
	}
	spec.SettingsFile = settingsPath
	spec.MCPConfigFile = mcpPath
	spec.PermissionPromptTool = prompt.ToolFlag
	spec.PermissionMode = "default"
	spec.AllowedTools = []string{}
	return nil
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

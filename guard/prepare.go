package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
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

	approvalPath := filepath.Join(hd, approvalConfigFile)
	pc := prompt.Config{
		JobID:        spec.JobID,
		Workspace:    spec.Workspace,
		StateDir:     g.dir.Root,
		Allow:        append([]string(nil), g.allow...),
		Protected:    g.denied(),
		Timeout:      g.timeout,
		ApprovalMode: mode,
		Policy:       spec.Policy,
		Ledger:       filepath.Join(hd, policy.LedgerFile),
		Jailed:       g.bwrap != "",
	}
	mcp := map[string]any{"mcpServers": map[string]any{
		"bridge": map[string]any{
			"type":    "stdio",
			"command": g.exe,
			"args":    []string{"approval-prompt", "--config", approvalPath},
			"env":     map[string]string{},
		},
	}}
	mcpPath := filepath.Join(hd, mcpConfigFile)

	// What the spawn waits for runs side by side: the walk for the
	// workspace's own secret files, the record of what runs later (for the
	// audit at the job's end; its paths are also denied to writes), and,
	// here meanwhile, the approval and MCP configs and the jail. No file
	// here is fsynced: each is written anew for its job and useless after a
	// power loss, which ends the job. Only the settings need the walks'
	// answers; they come last. Each stage's time goes into one log line.
	// The secret-file walk also lists the workspace's files: the record of
	// the job's start its changes are compared with (package changes).
	var (
		wg                                           sync.WaitGroup
		secretPaths                                  []string
		globDirs, globFiles                          []string
		scan                                         sandbox.RunsLaterScan
		scanErr, recordErr, approvalErr, mcpErr      error
		secretWalk, startRecord, runsLater, cfgFiles time.Duration
	)
	wg.Go(func() {
		t := time.Now()
		ws, wsErr := g.workspaceScan(spec.JobID, spec.Workspace)
		secretPaths = ws.Paths
		globDirs, globFiles = denyGlobPaths(spec, ws.Files)
		secretWalk = time.Since(t)
		t = time.Now()
		recordErr = g.recordStart(spec.JobID, spec.Workspace, denyGlobs(spec), ws, wsErr)
		startRecord = time.Since(t)
	})
	wg.Go(func() {
		t := time.Now()
		scan, scanErr = g.baseline(spec.JobID, spec.Workspace)
		runsLater = time.Since(t)
	})
	t := time.Now()
	if approvalErr = prompt.WriteConfig(approvalPath, pc); approvalErr == nil {
		mcpErr = writeJSON(mcpPath, mcp)
	}
	// The jail's directories and arguments need no walk either.
	settingsPath := filepath.Join(hd, settingsFile)
	var jailErr error
	if approvalErr == nil && mcpErr == nil && g.bwrap != "" {
		spec.Wrap, jailErr = g.jail(spec, []string{approvalPath, mcpPath, settingsPath, filepath.Join(hd, baselineFile)})
	}
	cfgFiles = time.Since(t)
	wg.Wait()
	switch {
	case jailErr != nil:
		return jailErr
	case approvalErr != nil:
		return fmt.Errorf("approval config: %w", approvalErr)
	case mcpErr != nil:
		return fmt.Errorf("MCP config: %w", mcpErr)
	case scanErr != nil:
		return fmt.Errorf("record what in the workspace runs later: %w", scanErr)
	case recordErr != nil:
		return recordErr
	}

	var wsSecrets []string
	for _, p := range secretPaths {
		wsSecrets = append(wsSecrets, sandbox.LiteralPattern(p))
	}
	denyPaths := literalDenyPaths(spec)
	denyPaths = append(denyPaths, globFiles...)
	denyWrite := slices.Concat(g.protected(), runsLaterDenies(spec.Workspace, scan), denyPaths)
	if spec.Policy != nil && spec.Policy.ReadOnly() {
		denyWrite = append(denyWrite, spec.Workspace) // read-only: commands write nothing in it
	}
	settings := sandbox.ClaudeSettings(sandbox.SettingsOptions{
		Sandbox:           g.sandbox,
		DenyRead:          slices.Concat(g.denied(), wsSecrets, denyPaths, globDirs),
		DenyWrite:         slices.Concat(denyWrite, globDirs),
		HideFromFileTools: slices.Concat(wsSecrets, denyPaths),
		// The jail shows the host's /proc (its own nested sandbox needs one
		// nothing is mounted over): the daemon's environment is in it.
		HideDirsFromFileTools: slices.Concat([]string{"/proc", "/sys"}, globDirs),
	})
	if !g.sandbox {
		delete(settings, "sandbox")
	}
	if err := writeJSON(settingsPath, settings); err != nil {
		return fmt.Errorf("settings: %w", err)
	}

	spec.SettingsFile = settingsPath
	spec.MCPConfigFile = mcpPath
	spec.PermissionPromptTool = prompt.ToolFlag
	spec.PermissionMode = "default"
	spec.AllowedTools = []string{}
	g.log.Info().Str("job", spec.JobID).Dur("secret_walk", secretWalk).Dur("start_record", startRecord).Dur("runs_later_scan", runsLater).
		Dur("config_files", cfgFiles).Dur("prepare", time.Since(start)).
		Msg("harness files written (the walks beside the config files and the jail)")
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

// literalDenyPaths are the deny_paths of the job's policy without
// wildcards, as absolute paths, for the OS sandbox and Claude Code's deny
// rules; globs are refused by the approval rules alone.
func literalDenyPaths(spec *harness.Spec) []string {
	if spec.Policy == nil {
		return nil
	}
	var out []string
	for _, g := range spec.Policy.DenyPaths {
		if strings.ContainsAny(g, "*?[") {
			continue
		}
		p := g
		if !filepath.IsAbs(p) {
			p = filepath.Join(spec.Workspace, filepath.FromSlash(g))
		}
		out = append(out, sandbox.LiteralPattern(filepath.Clean(p)))
	}
	return out
}

// denyGlobs are all the deny_paths of the job's policy, globs included.
func denyGlobs(spec *harness.Spec) []string {
	if spec.Policy == nil {
		return nil
	}
	return spec.Policy.DenyPaths
}

// denyGlobPaths are the files and dirs of the workspace the wildcard
// entries of deny_paths match, as the secret walk listed them at the job's
// start (policy.Enforced.DenyGlobMatches), as absolute literal paths: a
// search from above them names no deny path, so they are hidden like the
// literal entries. A file made later, or past the walk's limit, is held by
// the approval rules alone.
func denyGlobPaths(spec *harness.Spec, files []sandbox.FileEntry) (dirs, paths []string) {
	if spec.Policy == nil {
		return nil, nil
	}
	rels := make([]string, len(files))
	for i, f := range files {
		rels[i] = f.Path
	}
	d, f := spec.Policy.DenyGlobMatches(spec.Workspace, rels)
	abs := func(rel string) string {
		return sandbox.LiteralPattern(filepath.Join(spec.Workspace, filepath.FromSlash(rel)))
	}
	for _, rel := range d {
		dirs = append(dirs, abs(rel))
	}
	for _, rel := range f {
		paths = append(paths, abs(rel))
	}
	return dirs, paths
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return statedir.WriteFileAtomicNoSync(path, append(b, '\n'))
}

package guard

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/prompt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// A job's plan is what its harness files say: which paths the approval
// rules protect, which the OS sandbox denies to reads and writes, which
// Claude Code's file tools are denied, what the jail shows. plan,
// expandDenyGlobs and planSettings decide it from plain values and touch
// nothing: no file, no clock, no log. Prepare (the shell) reads what they
// need from the file system, calls them and writes what they decide. The
// plan comes in parts because the job's spawn waits for the walks of the
// workspace: the approval and MCP configs and the jail need no walk and
// are written while the walks run; the deny_paths globs are expanded in
// the secret walk's goroutine, beside the other walk; the settings need
// every answer.

// planInputs are the values a job's plan is made from.
type planInputs struct {
	// The guard's.
	Dir        statedir.Dir
	Exe        string // this bridge binary: the approval child
	HarnessBin string // the Claude Code binary ("" when none was found)
	EnvFile    string // the daemon's .env ("" when none)
	Home       string // the daemon's home ("" when unknown)
	Allow      []string
	Timeout    time.Duration
	Approval   bool     // BRIDGE_CC_APPROVAL, fixed for the job
	Sandbox    bool     // BRIDGE_SANDBOX
	Bwrap      string   // bubblewrap for the jail ("": no jail)
	Runtime    []string // BRIDGE_RUNTIME_ROOTS, resolved

	// The job's.
	JobID     string
	Workspace string
	ConfigDir string
	Policy    *policy.Enforced // nil: none

	// Stores are the credential stores under the home that exist, links
	// resolved (existingStores); read only for a jail.
	Stores []string
	// Overlay: the guard can mount a job's overlay (Guard.RecordMode).
	Overlay bool
}

// walked is what the walks of the workspace at the job's start found.
type walked struct {
	// Secrets are the workspace's secret files (sandbox.SecretScan.Paths).
	Secrets []string
	// Globs are the deny_paths globs expanded over the files the secret
	// walk listed (expandDenyGlobs, which the walk's goroutine runs, so
	// that the expansion overlaps the other walk).
	Globs globMatches
	// RunsLater is the record of what in the workspace runs later.
	RunsLater sandbox.RunsLaterScan
}

// globMatches are the workspace's paths the deny_paths globs match, as
// absolute literal patterns.
type globMatches struct {
	Dirs  []string // the highest matching dirs
	Files []string // the matching files in no matching dir
}

// jobPlan is the part of a job's plan no walk decides.
type jobPlan struct {
	HarnessDir    string
	ApprovalFile  string
	MCPFile       string
	SettingsFile  string
	RunsLaterFile string
	// Approval is the approval child's config; its Protected are the paths
	// no tool call may name, whatever a human says (approvalProtected).
	Approval prompt.Config
	MCP      map[string]any
	// RecordDeny are the deny_paths the start record of the job's changes
	// keeps: their files are never copied, read or diffed.
	RecordDeny []string
	// Jail is nil when the job runs in no jail.
	Jail *jailPlan
}

// jailPlan is the job's jail as far as it is decided: Prepare makes its
// /tmp, opens the workspace and the Writable dirs that hold no link, and
// fills in Options.BindFDs and Options.WritableDirs.
type jailPlan struct {
	Options sandbox.JailOptions
	// Writable are the write_paths dirs, relative to the workspace, bound
	// read-write over the read-only workspace (policy.Enforced.WritableDirs).
	Writable []string
	// Overlay: the job writes into an overlay of its workspace (a jailed
	// job that may write, where overlays mount): the record of its changes
	// is read from the overlay, and no walk of the workspace records it.
	Overlay bool
}

// settingsPlan is what Claude Code's settings say of paths, for
// sandbox.ClaudeSettings.
type settingsPlan struct {
	Sandbox   bool
	DenyRead  []string // commands cannot read them (the OS sandbox)
	DenyWrite []string // commands cannot write them
	HideFiles []string // Claude Code's file tools are denied these files
	HideDirs  []string // and these dirs with everything below them
}

// plan decides the approval config, the MCP config and the jail of a job.
func plan(in planInputs) jobPlan {
	hd := in.Dir.HarnessDir(in.JobID)
	p := jobPlan{
		HarnessDir:    hd,
		ApprovalFile:  filepath.Join(hd, approvalConfigFile),
		MCPFile:       filepath.Join(hd, mcpConfigFile),
		SettingsFile:  filepath.Join(hd, settingsFile),
		RunsLaterFile: filepath.Join(hd, baselineFile),
	}
	// The config's switch is fixed for the job; the flag file is read by the
	// child at every request, so `bridgectl approval on` takes effect at once.
	mode := approvals.ModeOn
	if !in.Approval {
		mode = approvals.ModeOff
	}
	p.Approval = prompt.Config{
		JobID:        in.JobID,
		Workspace:    in.Workspace,
		StateDir:     in.Dir.Root,
		Allow:        append([]string(nil), in.Allow...),
		Protected:    approvalProtected(in),
		Timeout:      in.Timeout,
		ApprovalMode: mode,
		Policy:       in.Policy,
		Ledger:       in.Dir.LedgerFile(in.JobID),
		Jailed:       in.Bwrap != "",
	}
	p.MCP = map[string]any{"mcpServers": map[string]any{
		"bridge": map[string]any{
			"type":    "stdio",
			"command": in.Exe,
			"args":    []string{"approval-prompt", "--config", p.ApprovalFile},
			"env":     map[string]string{},
		},
	}}
	if in.Policy != nil {
		p.RecordDeny = in.Policy.DenyPaths
	}
	if in.Bwrap != "" {
		overlay := in.Overlay && (in.Policy == nil || !in.Policy.ReadOnly())
		files := []string{p.ApprovalFile, p.MCPFile, p.SettingsFile}
		if !overlay {
			files = append(files, p.RunsLaterFile)
		}
		p.Jail = planJail(in, files)
		p.Jail.Overlay = overlay
	}
	return p
}

// overlay reports whether the plan's job writes into an overlay.
func (p jobPlan) overlay() bool { return p.Jail != nil && p.Jail.Overlay }

// planJail is the job's view of the filesystem (see Guard.jail): the
// workspace, the harness's config dir, a private /tmp, the owner's runtime
// roots, the bridge binary (the approval child) and Claude Code read-only.
// Nothing of the state dir is there but the job's own harness dir: the
// approval child reaches the daemon's approval service over loopback, so the
// queue, the audit log, the ledgers and the switches stay outside. The
// harness files the guard wrote are bound read-only over themselves.
func planJail(in planInputs, files []string) *jailPlan {
	tmp := filepath.Join(in.ConfigDir, jailTmpDir)
	ro := []string{in.Exe}
	if in.HarnessBin != "" {
		ro = append(ro, filepath.Dir(in.HarnessBin))
	}
	ro = append(ro, in.Runtime...)
	ro = append(ro, files...)
	pol := in.Policy
	j := &jailPlan{
		Options: sandbox.JailOptions{
			Bwrap:             in.Bwrap,
			Workspace:         in.Workspace,
			WorkspaceReadOnly: pol != nil && pol.RestrictsWrites(),
			ConfigDir:         in.ConfigDir,
			Tmp:               tmp,
			ReadOnly:          ro,
			Hide:              storesInRuntime(in.Stores, in.Runtime),
		},
	}
	if pol != nil && pol.RestrictsWrites() && !pol.ReadOnly() {
		j.Writable = pol.WritableDirs()
	}
	return j
}

// planSettings decides the paths of a job's settings from its inputs and
// what the walks found: the OS sandbox's read and write denials and the
// file tools' deny rules.
func planSettings(in planInputs, w walked) settingsPlan {
	var wsSecrets []string
	for _, p := range w.Secrets {
		wsSecrets = append(wsSecrets, sandbox.LiteralPattern(p))
	}
	globDirs := w.Globs.Dirs
	denyPaths := literalDenyPaths(in.Workspace, in.Policy)
	denyPaths = append(denyPaths, w.Globs.Files...)
	denyWrite := slices.Concat(protectedPaths(in.Dir.Root, in.EnvFile, in.Exe, in.HarnessBin), runsLaterDenies(in.Workspace, w.RunsLater), denyPaths)
	if in.Policy != nil && in.Policy.ReadOnly() {
		denyWrite = append(denyWrite, in.Workspace) // read-only: commands write nothing in it
	}
	return settingsPlan{
		Sandbox:   in.Sandbox,
		DenyRead:  slices.Concat(deniedPaths(in.Home, in.Dir.Root, in.EnvFile), wsSecrets, denyPaths, globDirs),
		DenyWrite: slices.Concat(denyWrite, globDirs),
		HideFiles: slices.Concat(wsSecrets, denyPaths),
		// The jail's own /proc holds its processes' environments (the
		// model proxy's token), and its /sys the host's.
		HideDirs: slices.Concat([]string{"/proc", "/sys"}, globDirs),
	}
}

// settings is the `--settings` object the plan says; with the OS sandbox
// off it has no sandbox section, and the file tools' deny rules remain.
func (s settingsPlan) settings() map[string]any {
	out := sandbox.ClaudeSettings(sandbox.SettingsOptions{
		Sandbox:               s.Sandbox,
		DenyRead:              s.DenyRead,
		DenyWrite:             s.DenyWrite,
		HideFromFileTools:     s.HideFiles,
		HideDirsFromFileTools: s.HideDirs,
	})
	if !s.Sandbox {
		delete(out, "sandbox")
	}
	return out
}

// deniedPaths are the paths no tool call of a job may name, whatever a
// human says and with approval off too: the state dir, the daemon's .env
// and the credential stores under the daemon's home. The OS sandbox hides
// the same paths from commands.
func deniedPaths(home, stateDir, envFile string) []string {
	return sandbox.DefaultDenyRead(home, stateDir, envFile)
}

// approvalProtected are the paths the approval rules deny to every tool
// call, whatever a human says and with approval off too: deniedPaths and the
// two binaries that run outside the OS sandbox for every job, this bridge
// (the approval child) and Claude Code. The sandbox's write denial and the
// jail's read-only binds hold the binaries for commands only: the file tools
// run outside the sandbox, and without a jail (BRIDGE_SANDBOX=off, macOS)
// the rules alone refuse a Write, an Edit or a command naming either. A Read
// of them is refused too. The daemon passes both with links resolved, and
// the rules resolve each protected path again as they check a call
// (sandbox.Guard), so a call that names either through a link is refused.
func approvalProtected(in planInputs) []string {
	out := deniedPaths(in.Home, in.Dir.Root, in.EnvFile)
	for _, p := range []string{in.Exe, in.HarnessBin} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// protectedPaths are the paths a workspace must not overlap and sandboxed
// commands must not write: the state dir, the daemon's .env, and the two
// binaries that run outside the OS sandbox for every job — this bridge (the
// approval child) and Claude Code. A job that could replace either would run
// its own code unsandboxed at the next job (or approve its own requests).
func protectedPaths(stateDir, envFile, exe, harnessBin string) []string {
	out := []string{stateDir}
	for _, p := range []string{envFile, exe, harnessBin} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// literalDenyPaths are the deny_paths of the job's policy without
// wildcards, as absolute paths, for the OS sandbox and Claude Code's deny
// rules; globs are expanded by expandDenyGlobs.
func literalDenyPaths(ws string, pol *policy.Enforced) []string {
	if pol == nil {
		return nil
	}
	var out []string
	for _, g := range pol.DenyPaths {
		if strings.ContainsAny(g, "*?[") {
			continue
		}
		p := g
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, filepath.FromSlash(g))
		}
		out = append(out, sandbox.LiteralPattern(filepath.Clean(p)))
	}
	return out
}

// expandDenyGlobs are the files and dirs of the workspace the wildcard
// entries of deny_paths match, among the files (relative, slash-separated)
// the secret walk listed at the job's start (policy.Enforced.DenyGlobMatches),
// as absolute literal patterns: a search from above them names no deny
// path, so they are hidden like the literal entries. A file made later, or
// past the walk's limit, is held by the approval rules alone.
func expandDenyGlobs(ws string, pol *policy.Enforced, files []string) globMatches {
	var m globMatches
	if pol == nil {
		return m
	}
	d, f := pol.DenyGlobMatches(ws, files)
	abs := func(rel string) string {
		return sandbox.LiteralPattern(filepath.Join(ws, filepath.FromSlash(rel)))
	}
	for _, rel := range d {
		m.Dirs = append(m.Dirs, abs(rel))
	}
	for _, rel := range f {
		m.Files = append(m.Files, abs(rel))
	}
	return m
}

// runsLaterDenies are the paths of scan the job's commands must not write:
// every git dir's config, hooks and info, the hook dirs and the runs-later
// files, outermost only (a denied dir covers what is in it). Git dirs
// themselves stay writable: objects, refs and the index are the job's work.
func runsLaterDenies(ws string, scan sandbox.RunsLaterScan) []string {
	keys := make([]string, 0, len(scan.Items))
	for k, it := range scan.Items {
		if it.What != "git dir" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out, dirs []string
	for _, k := range keys {
		covered := false
		for _, d := range dirs {
			if strings.HasPrefix(k, d+"/") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if scan.Items[k].Sum == "" || scan.Items[k].Sum == "d" {
			dirs = append(dirs, k)
		}
		out = append(out, filepath.Join(ws, filepath.FromSlash(k)))
	}
	return out
}

// storesInRuntime are the credential stores (existing, links resolved)
// that lie inside a runtime root: the jail covers each with an empty file
// or dir.
func storesInRuntime(stores, roots []string) []string {
	var out []string
	for _, s := range stores {
		for _, r := range roots {
			if contains(r, s) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

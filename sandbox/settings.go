package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// ErrUnavailable means the OS sandbox cannot run on this machine.
var ErrUnavailable = errors.New("OS sandbox unavailable")

// probeTimeout bounds the trial run of bubblewrap.
const probeTimeout = 10 * time.Second

// Available reports whether Claude Code's sandbox can run here and returns
// the bubblewrap to run jobs' jails with. On Linux that needs bubblewrap that
// can actually create a sandbox, and socat for Claude Code's network proxy,
// both found by look (the daemon's PATH without the dirs a job can write);
// macOS uses the built-in sandbox-exec. The error carries an install hint
// for the OS.
func Available(look func(name string) (string, error)) (string, error) {
	switch runtime.GOOS {
	case "darwin":
		if _, err := exec.LookPath("sandbox-exec"); err != nil {
			return "", fmt.Errorf("%w: sandbox-exec not found (it ships with macOS); or set BRIDGE_SANDBOX=off to run agent jobs without an OS sandbox", ErrUnavailable)
		}
		return "", nil
	case "linux":
	default:
		return "", fmt.Errorf("%w: no OS sandbox for %s; set BRIDGE_SANDBOX=off to run agent jobs without one", ErrUnavailable, runtime.GOOS)
	}
	bw, err := look("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap (bwrap) not found: %s; or set BRIDGE_SANDBOX=off to run agent jobs without an OS sandbox", ErrUnavailable, installHint())
	}
	if _, err := look("socat"); err != nil {
		return "", fmt.Errorf("%w: socat not found (Claude Code's sandbox needs it for its network proxy): %s", ErrUnavailable, installHint())
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bw, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", "/bin/sh", "-c", "exit 0").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s is installed but cannot create a sandbox (%v: %s); unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap)", ErrUnavailable, bw, err, out)
	}
	return bw, nil
}

func installHint() string {
	return "install it with `sudo apt-get install bubblewrap socat` (Debian/Ubuntu), `sudo dnf install bubblewrap socat` (Fedora), `sudo pacman -S bubblewrap socat` (Arch) or `sudo zypper install bubblewrap socat` (openSUSE)"
}

// AskTools are the harness tools whose every call must reach the permission
// prompt tool. Claude Code would otherwise allow reads inside its working
// directory by itself.
var AskTools = []string{
	"Bash", "Monitor", "PowerShell",
	"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS", "LSP",
	"WebFetch", "WebSearch",
	"Agent", "Skill",
}

// DeniedTools are Claude Code tools a job must never use, whatever a human
// or the approval mode says; the settings deny them outright, behind the
// harness not offering them (harness.DefaultTools). EnterWorktree moved a
// job's session into a git worktree outside its workspace, where the OS
// sandbox then let commands write; the others schedule
// work past the job, reach other sessions, or load instructions from the
// workspace the job writes.
var DeniedTools = []string{
	"EnterWorktree", "ExitWorktree", "CronCreate", "CronDelete", "CronList",
	"ScheduleWakeup", "SendMessage", "ListAgents", "RemoteTrigger", "Skill", "Workflow",
}

// DefaultDenyEnv are environment variables unset for sandboxed commands.
// The harness holds a token for the model endpoint; a command must not print it.
var DefaultDenyEnv = []string{
	"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN",
	"DEEPSEEK_API_KEY", "MCP_PATH_SECRET",
}

// SettingsOptions describe one job's harness settings.
type SettingsOptions struct {
	// Sandbox turns the OS sandbox on (BRIDGE_SANDBOX, on by default).
	Sandbox bool
	// DenyRead are paths sandboxed commands cannot read; usually
	// DefaultDenyRead(home, stateDir, envFile).
	DenyRead []string
	// DenyWrite are paths sandboxed commands cannot write even if they were
	// inside the workspace; usually the state dir and the .env file.
	DenyWrite []string
	// DenyEnv are environment variables unset inside the sandbox; nil means
	// DefaultDenyEnv.
	DenyEnv []string
	// FileToolDenyRules adds permissions.deny Read/Edit rules for DenyWrite,
	// so Claude Code's own file tools refuse them before the prompt tool is
	// asked. Off by default: the prompt tool already denies protected paths
	// and logs each attempt in the audit log, which a deny rule would bypass.
	FileToolDenyRules bool
	// HideFromFileTools are files (the workspace's own secret files) that
	// Claude Code's own file tools, which run outside the OS sandbox, must
	// refuse: a permissions.deny Read and Edit rule each, which holds with
	// human approval off too. Usually also in DenyRead.
	HideFromFileTools []string
	// HideDirsFromFileTools are dirs whose every file Claude Code's file
	// tools must refuse (a Read and Edit deny rule for the dir and below).
	HideDirsFromFileTools []string
}

// ClaudeSettings returns the `--settings` JSON object (Claude Code 2.1.328
// schema) for one job: the bubblewrap sandbox with no network and the given
// read denials, writes limited to the working directory (the workspace),
// no way out of the sandbox, no auto-allow of sandboxed commands (the
// approval rules still apply to every command), and every file, command and
// network tool routed through the permission prompt tool.
func ClaudeSettings(o SettingsOptions) map[string]any {
	denyEnv := o.DenyEnv
	if denyEnv == nil {
		denyEnv = DefaultDenyEnv
	}
	envVars := make([]any, 0, len(denyEnv))
	for _, name := range denyEnv {
		envVars = append(envVars, map[string]any{"name": name, "mode": "deny"})
	}
	sb := map[string]any{
		"enabled":                  o.Sandbox,
		"failIfUnavailable":        true,
		"autoAllowBashIfSandboxed": false,
		"allowUnsandboxedCommands": false,
		"filesystem": map[string]any{
			"denyRead":  nonNil(o.DenyRead),
			"denyWrite": nonNil(o.DenyWrite),
		},
		"network": map[string]any{
			"allowedDomains":      []string{},
			"strictAllowlist":     true,
			"allowLocalBinding":   false,
			"allowAllUnixSockets": false,
		},
		"credentials": map[string]any{"envVars": envVars},
	}
	perms := map[string]any{
		"ask":                          append([]string(nil), AskTools...),
		"defaultMode":                  "default",
		"disableBypassPermissionsMode": "disable",
	}
	deny := append([]string(nil), DeniedTools...)
	if o.FileToolDenyRules {
		for _, p := range o.DenyWrite {
			// "//" anchors a permission rule at the filesystem root.
			abs := "/" + filepath.Clean(p)
			deny = append(deny, "Read("+abs+")", "Read("+abs+"/**)", "Edit("+abs+")", "Edit("+abs+"/**)")
		}
	}
	for _, p := range o.HideFromFileTools {
		abs := "/" + filepath.Clean(p)
		deny = append(deny, "Read("+abs+")", "Edit("+abs+")")
	}
	for _, p := range o.HideDirsFromFileTools {
		abs := "/" + filepath.Clean(p)
		deny = append(deny, "Read("+abs+")", "Read("+abs+"/**)", "Edit("+abs+")", "Edit("+abs+"/**)")
	}
	perms["deny"] = deny
	return map[string]any{"sandbox": sb, "permissions": perms}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string(nil), s...)
}

// DefaultDenyRead lists what sandboxed commands must never read: the bridge's
// state dir, the daemon's .env, and the usual credential stores under home.
// Empty arguments are left out.
func DefaultDenyRead(home, stateDir, envFile string) []string {
	var out []string
	for _, p := range []string{stateDir, envFile} {
		if p != "" {
			out = append(out, filepath.Clean(p))
		}
	}
	if home == "" {
		return out
	}
	for _, rel := range credentialStores {
		out = append(out, filepath.Join(home, rel))
	}
	return out
}

// credentialStores are paths under home that hold credentials.
var credentialStores = []string{
	".ssh", ".aws", ".config/gcloud", ".docker", ".netrc", ".kube", ".gnupg",
	".npmrc", ".pypirc", ".git-credentials", ".config/gh", ".azure",
	".config/git/credentials", ".cargo/credentials", ".cargo/credentials.toml",
	".config/hub", ".terraform.d", ".vault-token", ".password-store",
	".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium",
	".claude", ".claude.json", ".config/claude", ".env",
}

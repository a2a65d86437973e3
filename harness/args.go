package harness

import (
	"path/filepath"
	"slices"
	"strings"
)

// allowedEnv names the variables of the daemon's environment a harness may
// see. Everything else — the DeepSeek key, MCP_PATH_SECRET, tunnel tokens,
// BRIDGE_* — stays out; the one token the harness needs is added explicitly.
var allowedEnv = map[string]bool{
	"PATH": true, "LANG": true, "LANGUAGE": true, "TERM": true, "TZ": true,
	"TMPDIR": true, "SHELL": true, "USER": true, "LOGNAME": true,
}

// AllowedEnv filters environ down to the allow-list (plus every LC_* variable).
func AllowedEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if allowedEnv[name] || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}

// Env is the complete environment of the harness for spec.
func (c *ClaudeCode) Env(spec Spec) []string {
	env := AllowedEnv(c.Environ)
	home := filepath.Join(spec.ConfigDir, "home")
	set := [][2]string{
		{"HOME", home},
		{"CLAUDE_CONFIG_DIR", spec.ConfigDir},
		{"BRIDGE_JOB_ID", spec.JobID},
		{"ANTHROPIC_BASE_URL", spec.BaseURL},
		{"ANTHROPIC_AUTH_TOKEN", spec.Token},
		{"ANTHROPIC_MODEL", spec.Model},
		{"ANTHROPIC_SMALL_FAST_MODEL", spec.Model},
		{"ANTHROPIC_DEFAULT_HAIKU_MODEL", spec.Model},
		{"ANTHROPIC_DEFAULT_SONNET_MODEL", spec.Model},
		{"ANTHROPIC_DEFAULT_OPUS_MODEL", spec.Model},
		{"CLAUDE_CODE_SUBAGENT_MODEL", spec.Model},
		{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
		{"DISABLE_AUTOUPDATER", "1"},
		{"DISABLE_TELEMETRY", "1"},
		{"DISABLE_ERROR_REPORTING", "1"},
		// The approval child's answer echoes a tool call's input: a Write of
		// 200 KiB must come back whole, not cut at 25,000 tokens.
		{"MAX_MCP_OUTPUT_TOKENS", maxMCPOutputTokens},
	}
	if c.NoRetries {
		set = append(set, [2]string{"CLAUDE_CODE_MAX_RETRIES", "0"})
	}
	if spec.Thinking == ThinkingOff {
		// Verified with 2.1.328: the request then carries no thinking
		// block and no context_management edit of thinking.
		set = append(set, [2]string{"MAX_THINKING_TOKENS", "0"})
	}
	for _, kv := range set {
		env = append(env, kv[0]+"="+kv[1])
	}
	// No PATH entry a job can write: not the workspace, not what the daemon
	// names untrusted (the allowed roots, the state dir, the temp dirs).
	untrusted := append(append([]string(nil), c.UntrustedDirs...), spec.Workspace)
	path, _ := TrustedPath(envValue(env, "PATH"), untrusted)
	return setEnv(env, "PATH", path)
}

// envValue returns the value of name in env, or "".
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// setEnv sets name to value, replacing every existing entry: of duplicates,
// exec would pass the last one on, not the one that was checked.
func setEnv(env []string, name, value string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(env, name+"="+value)
}

// DefaultTools are the built-in tools a job is offered (Claude Code's
// --tools): files, commands, the network tools that wait for a human,
// subagents and background-task control. Whatever a Claude Code release adds
// is not offered until it is named here. Left out on purpose (2.1.328 offers
// them by default, and they never reach the permission prompt tool):
// EnterWorktree/ExitWorktree — moves the session into a git worktree outside
// the workspace, where commands then write unattended;
// CronCreate/CronDelete/CronList and ScheduleWakeup — scheduling, meaningless
// in a one-shot job; SendMessage and ListAgents — other sessions; Skill and
// Workflow — instructions a job could plant in its own workspace; and
// ReportFindings.
var DefaultTools = []string{
	"Bash", "Edit", "Monitor", "NotebookEdit", "Read", "Task", "TaskStop",
	"ToolSearch", "WebFetch", "WebSearch", "Write",
}

// Args is the argv (without the binary) of the harness for spec.
func Args(spec Spec) []string {
	mode, tools := spec.PermissionMode, spec.AllowedTools
	if spec.PermissionPromptTool != "" {
		// Every call goes to the prompt tool: nothing is pre-allowed.
		if mode == "" {
			mode = "default"
		}
	} else {
		if mode == "" {
			mode = "acceptEdits"
		}
		if tools == nil {
			tools = []string{"Bash"}
		}
	}
	args := []string{
		"-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--permission-mode", mode,
		// Workspace .claude/settings*.json and .mcp.json must not widen what the job may do.
		"--setting-sources", "user", "--strict-mcp-config",
	}
	offered := spec.Tools
	if offered == nil {
		offered = DefaultTools
	}
	args = append(args, "--tools", strings.Join(offered, ","))
	if len(tools) > 0 {
		args = append(args, "--allowedTools", strings.Join(tools, ","))
	}
	if spec.SettingsFile != "" {
		args = append(args, "--settings", spec.SettingsFile)
	}
	if spec.MCPConfigFile != "" {
		args = append(args, "--mcp-config", spec.MCPConfigFile)
	}
	if spec.PermissionPromptTool != "" {
		args = append(args, "--permission-prompt-tool", spec.PermissionPromptTool)
	}
	if spec.Thinking != "" && spec.Thinking != ThinkingOff {
		// 2.1.328 sends --effort as output_config.effort, which DeepSeek's
		// Anthropic format reads as its thinking effort; CLAUDE_EFFORT in its
		// environment is not read (it sends high whatever it says).
		args = append(args, "--effort", spec.Thinking)
	}
	if spec.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", spec.AppendSystemPrompt)
	}
	if spec.Resume != "" {
		args = append(args, "--resume", spec.Resume)
	}
	return args
}

// ThinkingOff is the thinking level that turns thinking off.
const ThinkingOff = "off"

// maxMCPOutputTokens is the MCP result size Claude Code takes whole in a
// job: above any approval answer (an input is at most 16 MiB).
const maxMCPOutputTokens = "10000000"

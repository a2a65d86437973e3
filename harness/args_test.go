package harness

import (
	"slices"
	"strings"
	"testing"
)

// flagValue returns the value after flag in args, and whether flag is there.
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", i >= 0
	}
	return args[i+1], true
}

func TestArgsPermissionLayer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      Spec
		mode      string
		allowed   string // "" = no --allowedTools at all
		prompt    string
		settings  string
		mcpConfig string
	}{
		{name: "no prompt tool: acceptEdits and Bash", spec: Spec{}, mode: "acceptEdits", allowed: "Bash"},
		{name: "explicit tools", spec: Spec{AllowedTools: []string{"Bash", "Read"}, PermissionMode: "plan"}, mode: "plan", allowed: "Bash,Read"},
		{name: "empty tools", spec: Spec{AllowedTools: []string{}}, mode: "acceptEdits"},
		{
			name: "prompt tool: nothing pre-allowed",
			spec: Spec{PermissionPromptTool: "mcp__bridge__approve", SettingsFile: "/s.json", MCPConfigFile: "/m.json"},
			mode: "default", prompt: "mcp__bridge__approve", settings: "/s.json", mcpConfig: "/m.json",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := Args(tc.spec)
			if v, _ := flagValue(args, "--permission-mode"); v != tc.mode {
				t.Errorf("--permission-mode %q, want %q: %v", v, tc.mode, args)
			}
			v, ok := flagValue(args, "--allowedTools")
			if tc.allowed == "" && ok {
				t.Errorf("--allowedTools %q present: %v", v, args)
			} else if tc.allowed != "" && v != tc.allowed {
				t.Errorf("--allowedTools %q, want %q", v, tc.allowed)
			}
			for flag, want := range map[string]string{"--permission-prompt-tool": tc.prompt, "--settings": tc.settings, "--mcp-config": tc.mcpConfig} {
				v, ok := flagValue(args, flag)
				if want == "" && ok || want != "" && v != want {
					t.Errorf("%s = %q (present %v), want %q", flag, v, ok, want)
				}
			}
			if !slices.Contains(args, "--strict-mcp-config") || !strings.Contains(strings.Join(args, " "), "--setting-sources user") {
				t.Errorf("workspace settings and MCP servers not shut out: %v", args)
			}
			if slices.Contains(args, "--dangerously-skip-permissions") {
				t.Errorf("permissions skipped: %v", args)
			}
		})
	}
}

// TestArgsOfferOnlyTheJobTools: Claude Code offers exactly the named
// built-in tools (--tools), so a tool a release adds, or one that skips the
// permission prompt (EnterWorktree moved a job outside its workspace), is
// not there unless named.
func TestArgsOfferOnlyTheJobTools(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{}, strings.Join(DefaultTools, ",")},
		{Spec{PermissionPromptTool: "mcp__bridge__approve"}, strings.Join(DefaultTools, ",")},
		{Spec{Tools: []string{"Read"}}, "Read"},
		{Spec{Tools: []string{}}, ""},
	} {
		v, ok := flagValue(Args(tc.spec), "--tools")
		if !ok || v != tc.want {
			t.Errorf("%+v: --tools %q (present %v), want %q", tc.spec, v, ok, tc.want)
		}
	}
	for _, never := range []string{"EnterWorktree", "ExitWorktree", "CronCreate", "ScheduleWakeup", "SendMessage", "ListAgents", "Skill", "Workflow"} {
		if slices.Contains(DefaultTools, never) {
			t.Errorf("DefaultTools offers %s", never)
		}
	}
}

// The thinking level reaches Claude Code 2.1.328 as it reads it (checked
// against the real binary and the double: --effort becomes
// output_config.effort; CLAUDE_EFFORT is not read; MAX_THINKING_TOKENS=0
// leaves the thinking block out), and the caller's contract text as
// --append-system-prompt.
func TestArgsThinkingAndContract(t *testing.T) {
	for _, tc := range []struct {
		thinking, effort string
		noThinking       bool
	}{
		{"", "", false}, {"low", "low", false}, {"max", "max", false}, {"off", "", true},
	} {
		spec := Spec{Thinking: tc.thinking, AppendSystemPrompt: "Answer in JSON.", JobID: "j", ConfigDir: "/c", Workspace: "/w"}
		v, ok := flagValue(Args(spec), "--effort")
		if ok != (tc.effort != "") || v != tc.effort {
			t.Errorf("thinking %q: --effort %q (present %v), want %q", tc.thinking, v, ok, tc.effort)
		}
		if v, _ := flagValue(Args(spec), "--append-system-prompt"); v != "Answer in JSON." {
			t.Errorf("--append-system-prompt %q", v)
		}
		env := (&ClaudeCode{}).Env(spec)
		if got := slices.Contains(env, "MAX_THINKING_TOKENS=0"); got != tc.noThinking {
			t.Errorf("thinking %q: MAX_THINKING_TOKENS=0 in env = %v", tc.thinking, got)
		}
	}
}

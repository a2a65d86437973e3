// Package approvals decides which harness tool calls run unattended, and
// queues the rest for a human: the rules (Classify), the file-based queue in
// the state dir that bridgectl answers (Queue), the JSONL audit log, and the
// approval child that Claude Code calls as its permission prompt tool
// (RunPrompt). Everything fails closed: what the rules do not clearly allow
// goes to a human, and no answer means deny.
package approvals

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// Action is what happens to one tool call.
type Action string

const (
	Allow Action = "allow" // runs unattended
	Ask   Action = "ask"   // a human decides
	Deny  Action = "deny"  // refused without asking
)

// Request is one tool call the harness wants to make.
type Request struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
}

// Policy is what the rules are measured against for one job.
type Policy struct {
	Workspace string   // absolute; the job's working directory
	Allow     []string // first words that may run unattended (BRIDGE_APPROVE_ALLOW)
	Protected []string // paths no tool call may touch: state dir, the daemon's .env
}

// Verdict is the rules' answer for one Request.
type Verdict struct {
	Decision Action `json:"decision"`
	Reason   string `json:"reason"`
	Summary  string `json:"summary"` // one line for a human: the tool and its command or paths
}

// HarmlessTools run unattended: they only touch the harness's own bookkeeping
// (todo lists, background task output, tool schemas, plan mode), never files,
// commands or the network.
var HarmlessTools = []string{
	"TodoWrite", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate",
	"TaskOutput", "BashOutput", "TaskStop", "KillShell", "KillBash",
	"ToolSearch", "EnterPlanMode", "ExitPlanMode",
}

// DelegationTools run unattended because they only start a subagent whose
// own tool calls go through the same permission prompt tool (verified with
// Claude Code 2.1.328: a subagent's Bash call waited for a human).
var DelegationTools = []string{"Agent"}

// commandTools hold a POSIX shell command in the named input field.
var commandTools = map[string]string{"Bash": "command", "Monitor": "command"}

// pathArg is one path-like input field of a file tool.
type pathArg struct {
	key      string
	required bool
	glob     bool // relative to the tool's "path" argument, not the workspace
}

// fileTools lists the path arguments of every file tool. Grep's "pattern" is a
// regular expression, not a path, and is deliberately absent.
var fileTools = map[string][]pathArg{
	"Read":         {{key: "file_path", required: true}},
	"Write":        {{key: "file_path", required: true}},
	"Edit":         {{key: "file_path", required: true}},
	"MultiEdit":    {{key: "file_path", required: true}},
	"NotebookEdit": {{key: "notebook_path", required: true}},
	"NotebookRead": {{key: "notebook_path", required: true}},
	"LS":           {{key: "path"}},
	"Glob":         {{key: "path"}, {key: "pattern", required: true, glob: true}},
	"Grep":         {{key: "path"}, {key: "glob", glob: true}},
	"LSP":          {{key: "filePath", required: true}},
}

var networkTools = map[string]bool{"WebFetch": true, "WebSearch": true}

// writeTools are the file tools that change a file.
var writeTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// runLaterDirs and runLaterFiles name workspace paths whose contents other
// programs run later on the owner's machine, outside any sandbox: git's
// config and hooks (core.fsmonitor runs at the owner's next `git status`),
// Claude Code's project settings and MCP servers (hooks,
// enableAllProjectMcpServers), editors' task files, hook managers' dirs,
// shell start-up files. Claude Code's sandbox refuses its commands writes to
// most of them; its file tools run outside the sandbox, so the rules deny
// them a write there — with approval off too (found in review: an Edit of
// .git/config planted an fsmonitor that ran with the owner's environment).
var (
	runLaterDirs  = []string{".git", ".claude", ".vscode", ".idea", ".husky", ".githooks"}
	runLaterFiles = []string{".mcp.json", ".gitmodules", ".gitconfig", ".bashrc", ".bash_profile", ".bash_login",
		".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".ripgreprc", ".envrc", ".npmrc", ".yarnrc", ".yarnrc.yml"}
)

// runsLater returns the workspace-relative path when path (absolute, or
// relative to the workspace) lies in a runLaterDirs dir or names a
// runLaterFiles file, anywhere below the workspace.
func runsLater(path, workspace string) (string, bool) {
	rel, below := belowWorkspace(path, workspace)
	if !below {
		return "", false
	}
	comps := strings.Split(rel, string(filepath.Separator))
	for i, c := range comps {
		c = strings.ToLower(c)
		if i < len(comps)-1 && slices.Contains(runLaterDirs, c) || i == len(comps)-1 && (slices.Contains(runLaterFiles, c) || slices.Contains(runLaterDirs, c)) {
			return rel, true
		}
	}
	return "", false
}

// belowWorkspace returns path relative to the workspace (as given or with
// its symlinks resolved), cleaned; a relative path is taken as relative to
// the workspace already. below is false for an absolute path elsewhere.
func belowWorkspace(path, workspace string) (rel string, below bool) {
	if !filepath.IsAbs(path) {
		return filepath.Clean(path), true
	}
	for _, ws := range []string{workspace, resolvedOrSelf(workspace)} {
		if r, err := filepath.Rel(ws, path); ws != "" && err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return r, true
		}
	}
	return filepath.Clean(path), false
}

// maxSummary bounds the one-line summary shown to a human (the full input is
// in the request file).
const maxSummary = 400

// Classify applies the rules of issue 4 to one tool call:
//   - command tools (Bash, Monitor) by ClassifyCommand;
//   - file tools: every path argument admitted by sandbox against the
//     workspace; inside runs unattended, outside goes to a human, a protected
//     path (state dir, the daemon's .env) is denied, a .env file goes to a human;
//   - WebFetch and WebSearch go to a human;
//   - HarmlessTools and DelegationTools (Agent) run unattended;
//     AskUserQuestion is denied (nobody is there to answer during a job);
//   - every other tool, mcp__* included, goes to a human.
func Classify(req Request, p Policy) Verdict {
	if field, ok := commandTools[req.Tool]; ok {
		cmd, ok := req.Input[field].(string)
		if !ok {
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is missing or not a string", req.Tool, field), Summary: summarize(req)}
		}
		v := ClassifyCommand(cmd, p)
		v.Summary = clip(req.Tool + ": " + cmd)
		if v.Decision == Allow && truthy(req.Input["dangerouslyDisableSandbox"]) {
			v.Decision, v.Reason = Ask, "the command asks to run outside the OS sandbox (dangerouslyDisableSandbox)"
		}
		// A process that keeps running beside the job's later tool calls can
		// swap a symlink between the rules' check of a file tool's path and
		// Claude Code's write (an attack review landed racing Writes outside
		// the workspace this way), so only a human starts one.
		if bg, set := req.Input["run_in_background"]; v.Decision == Allow && (req.Tool == "Monitor" || set && bg != nil && bg != false) {
			v.Decision, v.Reason = Ask, "the command keeps running in the background, beside the job's later tool calls: a human decides"
		}
		return v
	}
	if args, ok := fileTools[req.Tool]; ok {
		return classifyFile(req, args, p)
	}
	switch {
	case slices.Contains(sandbox.DeniedTools, req.Tool):
		return Verdict{Decision: Deny, Reason: req.Tool + " is never allowed in a job: it would act outside the workspace or past the job's end", Summary: summarize(req)}
	case networkTools[req.Tool]:
		return Verdict{Decision: Ask, Reason: req.Tool + " reaches the network: a human decides", Summary: summarize(req)}
	case slices.Contains(HarmlessTools, req.Tool):
		return Verdict{Decision: Allow, Reason: req.Tool + " only touches the harness's own bookkeeping", Summary: summarize(req)}
	case slices.Contains(DelegationTools, req.Tool) && req.Input["isolation"] != nil && req.Input["isolation"] != "":
		// isolation "worktree" runs the subagent in a git worktree of the
		// repository around the workspace, where its commands wrote the
		// owner's refs (found in review); "remote" leaves the machine.
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("a subagent with isolation %v would work outside the workspace: start it without isolation", req.Input["isolation"]), Summary: summarize(req)}
	case slices.Contains(DelegationTools, req.Tool):
		return Verdict{Decision: Allow, Reason: req.Tool + " starts a subagent whose own tool calls are checked the same way", Summary: summarize(req)}
	case req.Tool == "AskUserQuestion":
		return Verdict{Decision: Deny, Reason: "nobody can answer questions while a job runs: state your assumption and carry on, or ask in your final answer", Summary: summarize(req)}
	case req.Tool == "PowerShell":
		return Verdict{Decision: Ask, Reason: "PowerShell commands are not classified by the rules: a human decides", Summary: summarize(req)}
	case req.Tool == "":
		return Verdict{Decision: Deny, Reason: "malformed request: no tool name", Summary: summarize(req)}
	case strings.HasPrefix(req.Tool, "mcp__"):
		return Verdict{Decision: Ask, Reason: "MCP tool " + req.Tool + " is not known to the rules: a human decides", Summary: summarize(req)}
	}
	return Verdict{Decision: Ask, Reason: "tool " + req.Tool + " is not known to the rules: a human decides", Summary: summarize(req)}
}

func classifyFile(req Request, args []pathArg, p Policy) Verdict {
	g := sandbox.Guard{Workspace: p.Workspace, Protected: p.Protected}
	base := "."
	var shown []string
	var ask []string
	for _, a := range args {
		raw, present := req.Input[a.key]
		if !present || raw == nil {
			if a.required {
				return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is missing", req.Tool, a.key), Summary: summarize(req)}
			}
			continue
		}
		s, ok := raw.(string)
		if !ok {
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is not a string", req.Tool, a.key), Summary: summarize(req)}
		}
		if s == "" {
			if a.required {
				return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is empty", req.Tool, a.key), Summary: summarize(req)}
			}
			continue
		}
		path := s
		if a.glob {
			path = strings.TrimPrefix(path, "!") // a Grep glob may be negated
			if !filepath.IsAbs(path) && !strings.HasPrefix(path, "~") {
				path = strings.TrimSuffix(base, "/") + "/" + path // not Join: it would clean ".." away
			}
		}
		if a.key == "path" {
			base = s
		}
		shown = append(shown, s)
		d := g.Admit(path)
		if writeTools[req.Tool] {
			for _, c := range []string{path, d.Resolved} {
				if rel, later := runsLater(c, p.Workspace); c != "" && later {
					return Verdict{Decision: Deny, Reason: fmt.Sprintf("%s is run later outside any sandbox (by git, Claude Code, an editor or a shell): no job may write it, and its commands cannot either", rel), Summary: clip(req.Tool + " " + strings.Join(shown, " "))}
				}
			}
		}
		switch {
		case d.Protected:
			return Verdict{Decision: Deny, Reason: d.Reason + " (its state dir, its .env or a credential store): no job may touch it", Summary: clip(req.Tool + " " + strings.Join(shown, " "))}
		case !d.Inside:
			ask = append(ask, d.Reason)
		case namesDotEnv(s, p.Workspace) || namesDotEnv(d.Resolved, p.Workspace):
			ask = append(ask, s+" names a .env file, which usually holds secrets")
		}
	}
	summary := clip(req.Tool + " " + strings.Join(shown, " "))
	if len(shown) == 0 {
		summary = req.Tool + " (workspace)"
	}
	if len(ask) > 0 {
		return Verdict{Decision: Ask, Reason: strings.Join(ask, "; "), Summary: summary}
	}
	return Verdict{Decision: Allow, Reason: "every path is inside the workspace", Summary: summary}
}

// namesDotEnv reports whether a path names a .env-style file or directory:
// a component, below the workspace, that contains ".env" in any case. The
// workspace's own path is left out, so a project under ~/my.envoy/ is not
// flagged as a whole.
func namesDotEnv(path, workspace string) bool {
	rel, _ := belowWorkspace(path, workspace) // outside: every component counts
	for _, comp := range strings.Split(rel, string(filepath.Separator)) {
		if strings.Contains(strings.ToLower(comp), ".env") {
			return true
		}
	}
	return false
}

func resolvedOrSelf(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func truthy(v any) bool {
	b, ok := v.(bool)
	return ok && b
}

// summarize renders a tool call in one line.
func summarize(req Request) string {
	b, err := json.Marshal(req.Input)
	if err != nil {
		b = []byte("{…}")
	}
	return clip(req.Tool + " " + string(b))
}

func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxSummary {
		return s
	}
	// Keep both ends: what a long command ends with (`echo <400 a's> ; rm -rf
	// ~/x`) matters as much as how it starts.
	head, tail := maxSummary*2/3, maxSummary/4
	for head > 0 && !utf8Start(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8Start(s[from]) {
		from++
	}
	return fmt.Sprintf("%s … [%d bytes cut] … %s", s[:head], from-head, s[from:])
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

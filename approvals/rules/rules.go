// Package rules classifies one harness tool call: it runs unattended, goes
// to a human, or is refused. Classify takes any tool call, ClassifyCommand a
// shell command. The rules keep no state and write nothing; they read the
// file system only to resolve the paths a call names. They fail closed: what
// they do not clearly allow goes to a human.
package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
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

// protectedWhy ends the reason of every deny of a protected path (Policy.Protected).
const protectedWhy = " (its state dir, its .env, a credential store, or a binary that runs every job outside the sandbox): no job may touch it"

// Policy is what the rules are measured against for one job.
type Policy struct {
	Workspace string   // absolute; the job's working directory
	Allow     []string // first words that may run unattended (BRIDGE_APPROVE_ALLOW)
	Protected []string // paths no tool call may touch: state dir, the daemon's .env, credential stores, the bridge and Claude Code binaries
	// Job is the job's enforced policy (nil: none); it only narrows.
	Job *policy.Enforced
	// Jailed is true when an OS jail holds the job's write_paths for its
	// commands (Linux, bubblewrap, the sandbox on). Without one the rules
	// alone hold them, and allow only commands whose writes they model.
	Jailed bool

	// globs is what is left of this call's glob budget (maxGlobWork), set by
	// Classify and ClassifyCommand.
	globs *globBudget
}

// budgeted gives p a glob budget of its own for one call, unless it has one.
func (p Policy) budgeted() Policy {
	if p.globs == nil {
		p.globs = newGlobBudget()
	}
	return p
}

// overBudget sends an allowed call whose globs went past maxGlobWork to a
// human: some of what they match went unchecked.
func overBudget(v Verdict, p Policy) Verdict {
	if v.Decision == Allow && p.globs != nil && p.globs.left < 0 {
		v.Decision = Ask
		v.Reason = fmt.Sprintf("its globs match more than the %d files the rules check in one call: a human decides", maxGlobWork)
	}
	return v
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

// MaxCommandBytes is the longest command the rules read; a longer one is
// denied.
const MaxCommandBytes = 64 << 10

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

// Classify applies the rules to one tool call:
//   - command tools (Bash, Monitor) by ClassifyCommand;
//   - file tools: every path argument admitted by sandbox against the
//     workspace; inside runs unattended, outside goes to a human, a protected
//     path (state dir, the daemon's .env) is denied, a .env file goes to a human;
//   - WebFetch and WebSearch go to a human;
//   - HarmlessTools and DelegationTools (Agent) run unattended;
//     AskUserQuestion is denied (nobody is there to answer during a job);
//   - every other tool, mcp__* included, goes to a human;
//
// and then the job's policy narrows the verdict (applyJob).
func Classify(req Request, p Policy) Verdict {
	p = p.budgeted()
	return overBudget(applyJob(req, p, classify(req, p)), p)
}

func classify(req Request, p Policy) Verdict {
	if field, ok := commandTools[req.Tool]; ok {
		cmd, ok := req.Input[field].(string)
		if !ok {
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is missing or not a string", req.Tool, field), Summary: Summarize(req)}
		}
		if len(cmd) > MaxCommandBytes {
			// Reading one costs the daemon seconds a MiB (each glob is
			// expanded): a job could keep its CPU busy, and a person could
			// not read it either.
			return Verdict{Decision: Deny, Summary: Clip(req.Tool + ": " + cmd), Reason: fmt.Sprintf(
				"the command is %d KiB, longer than the rules read (%d KiB): write long content with the Write tool, or put the commands in a script file and run that", len(cmd)>>10, MaxCommandBytes>>10)}
		}
		v := ClassifyCommand(cmd, p)
		v.Summary = Clip(req.Tool + ": " + cmd)
		if v.Decision == Allow && truthy(req.Input["dangerouslyDisableSandbox"]) {
			v.Decision, v.Reason = Ask, "the command asks to run outside the OS sandbox (dangerouslyDisableSandbox)"
		}
		// A process that keeps running beside the job's later tool calls can
		// swap a symlink between the rules' check of a file tool's path and
		// Claude Code's write, so only a human starts one.
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
		return Verdict{Decision: Deny, Reason: req.Tool + " is never allowed in a job: it would act outside the workspace or past the job's end", Summary: Summarize(req)}
	case networkTools[req.Tool]:
		return Verdict{Decision: Ask, Reason: req.Tool + " reaches the network: a human decides", Summary: Summarize(req)}
	case slices.Contains(HarmlessTools, req.Tool):
		return Verdict{Decision: Allow, Reason: req.Tool + " only touches the harness's own bookkeeping", Summary: Summarize(req)}
	case slices.Contains(DelegationTools, req.Tool) && req.Input["isolation"] != nil && req.Input["isolation"] != "":
		// isolation "worktree" runs the subagent in a git worktree of the
		// repository around the workspace, where its commands can write the
		// owner's refs; "remote" leaves the machine.
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("a subagent with isolation %v would work outside the workspace: start it without isolation", req.Input["isolation"]), Summary: Summarize(req)}
	case slices.Contains(DelegationTools, req.Tool):
		return Verdict{Decision: Allow, Reason: req.Tool + " starts a subagent whose own tool calls are checked the same way", Summary: Summarize(req)}
	case req.Tool == "AskUserQuestion":
		return Verdict{Decision: Deny, Reason: "nobody can answer questions while a job runs: state your assumption and carry on, or ask in your final answer", Summary: Summarize(req)}
	case req.Tool == "PowerShell":
		return Verdict{Decision: Ask, Reason: "PowerShell commands are not classified by the rules: a human decides", Summary: Summarize(req)}
	case req.Tool == "":
		return Verdict{Decision: Deny, Reason: "malformed request: no tool name", Summary: Summarize(req)}
	case strings.HasPrefix(req.Tool, "mcp__"):
		return Verdict{Decision: Ask, Reason: "MCP tool " + req.Tool + " is not known to the rules: a human decides", Summary: Summarize(req)}
	}
	return Verdict{Decision: Ask, Reason: "tool " + req.Tool + " is not known to the rules: a human decides", Summary: Summarize(req)}
}

func truthy(v any) bool {
	b, ok := v.(bool)
	return ok && b
}

// rank orders the decisions from the most to the least permissive.
func rank(a Action) int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2 // Deny, and anything unknown
}

// Stricter returns the stricter of two verdicts on one call (a deny over an
// ask over an allow; a tie keeps a). The daemon classifies a job's call in
// its own view of the filesystem and the job's approval child in the job's
// (its overlay, its jail's /tmp, the links it made): the call runs in the
// job's view, and neither reading may loosen the other.
func Stricter(a, b Verdict) Verdict {
	if rank(b.Decision) > rank(a.Decision) {
		return b
	}
	return a
}

// Package harness runs the agent harness of a job — Claude Code, headless —
// and turns its stream-json output into typed events. The job registry depends
// on the Harness interface here, never on Claude Code itself.
package harness

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// Harness starts one agent run per job.
type Harness interface {
	// Start launches the harness for spec. The run ends on its own when the
	// harness reports its result, or when Stop is called; ctx only bounds the
	// launch itself and, if it ends first, stops the run like Stop.
	Start(ctx context.Context, spec Spec) (Run, error)
}

// Run is one live harness process (and its process group).
type Run interface {
	// Events delivers what the harness reports, in order. It is closed once the
	// harness's output has ended; the caller must drain it.
	Events() <-chan Event
	// Stop ends the run: SIGTERM to the whole process group, SIGKILL after the
	// grace period. Safe to call more than once and after the run ended.
	Stop()
	// Wait blocks until the process has exited and its group has been killed,
	// and reports how it ended.
	Wait() Exit
	// PID is the process id, which is also the process group id.
	PID() int
}

// Messenger is a Run that takes messages while it runs (Claude Code's
// stream-json input). Verified with 2.1.328: a user message written while a
// turn runs is taken as the next turn once it ends, with its own result
// line; a control_request {"subtype":"interrupt"} ends the current turn at
// once (a control_response, then a result of subtype
// error_during_execution), and a message written after it runs next.
type Messenger interface {
	// Send writes a user message: it runs after the current turn. The run's
	// input stays open until the result of the last message sent.
	Send(text string) error
	// Interrupt asks the harness to end its current turn.
	Interrupt() error
}

// ErrInputClosed: the run's last turn has ended (or it was stopped), so it
// takes no more messages.
var ErrInputClosed = errors.New("the harness has ended its last turn and takes no more messages")

// Exit is how a run's process ended.
type Exit struct {
	Code    int     // exit code, -1 when killed by a signal
	Signal  string  // the signal that ended it, if any
	Stopped bool    // Stop was called
	Stderr  string  // the last few KB of stderr
	Err     error   // a failure of the run itself (not of the task)
	Limit   *Breach // the bound of Spec.Limits the run passed, which ended it
}

// Spec is everything one job's harness needs.
type Spec struct {
	// JobID is also the marker BRIDGE_JOB_ID in the child's environment, which
	// lets tests (and a restarted daemon) find every process of the job's tree.
	JobID     string
	Task      string // sent on stdin, never in argv
	Workspace string // the working directory
	// ConfigDir is the job's private dir (CLAUDE_CONFIG_DIR; HOME is ConfigDir/home).
	ConfigDir string

	BaseURL string // ANTHROPIC_BASE_URL
	Token   string // ANTHROPIC_AUTH_TOKEN
	Model   string // ANTHROPIC_MODEL and every small/fast model variable

	// Without a PermissionPromptTool, PermissionMode defaults to acceptEdits
	// (file edits inside the workspace only) and AllowedTools to Bash. With
	// one, the mode defaults to "default" and nothing is pre-allowed, so every
	// tool call reaches the prompt tool.
	PermissionMode string
	AllowedTools   []string

	// Tools are the only built-in tools Claude Code offers the job
	// (--tools); nil means DefaultTools. Anything not named is not there.
	Tools []string

	// Thinking is the job's thinking level (deepseek.ThinkingLevels; ""
	// leaves Claude Code's default): an effort is passed as --effort, off
	// as MAX_THINKING_TOKENS=0, which makes Claude Code send no thinking
	// block (the model proxy then turns DeepSeek's thinking off).
	Thinking string
	// AppendSystemPrompt is passed as --append-system-prompt.
	AppendSystemPrompt string
	// Parent is the job this one continues ("" for none), for the guard: what
	// the parent did not land is carried into this job's view.
	Parent string
	// Policy is the job's enforced policy, for the guard's files (nil: none).
	Policy *policy.Enforced

	// Resume is the Claude Code session the run resumes (--resume); its
	// files must be in ConfigDir already. "" starts a new session.
	Resume string

	// Optional hooks for the approval and sandbox layers.
	SettingsFile         string // --settings
	MCPConfigFile        string // --mcp-config (with --strict-mcp-config always on)
	PermissionPromptTool string // --permission-prompt-tool
	// Wrap is an argv prefix the harness is started through (the guard's
	// jail: bubblewrap ending in "--"); the binary and its arguments follow.
	Wrap []string
	// WrapFiles are descriptors the wrap inherits, as fds 3, 4, … in order
	// (the jail's --bind-fd); the harness closes them once it has started.
	WrapFiles []*os.File
	// WrapAttr, when set, adjusts the process attributes the wrap starts
	// with (the guard's overlay: a new user and mount namespace).
	WrapAttr func(*syscall.SysProcAttr)
	// Limits are the job's own bounds (the guard's, from the owner's
	// settings), held while the run lives.
	Limits Limits
	// OwnPIDNamespace: the wrap starts as the first process of the job's
	// own PID namespace, which mounts that namespace's /proc; the watcher
	// then reads the job's processes there (/proc/<pid>/root/proc) instead
	// of the whole machine's.
	OwnPIDNamespace bool
}

// CloseWrapFiles closes the descriptors of WrapFiles: for a spec whose
// harness never starts.
func (s *Spec) CloseWrapFiles() {
	for _, f := range s.WrapFiles {
		f.Close()
	}
	s.WrapFiles = nil
}

// Kind says what an Event carries.
type Kind string

const (
	KindInit       Kind = "init"        // SessionID, Model
	KindToolUse    Kind = "tool_use"    // ToolUse: one step
	KindToolResult Kind = "tool_result" // ToolResult
	KindText       Kind = "text"        // Text: a note of the model
	KindUsage      Kind = "usage"       // MessageID, Usage: tokens of one model message
	KindResult     Kind = "result"      // Result: the harness's final word
)

// Event is one thing the harness reported.
type Event struct {
	Kind       Kind
	Time       time.Time
	SessionID  string
	Model      string
	MessageID  string
	ToolUse    *ToolUse
	ToolResult *ToolResult
	Text       string
	Usage      *Usage
	Result     *Result
}

// ToolUse is one tool call of the model.
type ToolUse struct {
	ID     string
	Name   string
	Detail string // short, human-readable: the command, the path, the pattern
	// Path is the file a write/edit tool targets; Command is a Bash command.
	Path    string
	Command string
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	// ExitCode is a Bash command's exit status when the harness told it
	// (0 on success, N from "Exit code N"); nil when unknown.
	ExitCode *int
	Denied   bool   // refused by the permission layer, never ran
	Text     string // the first few hundred characters
	// Tail is the end of the output: its last TailLines lines, at most
	// TailBytes, with control characters escaped (OutputTail).
	Tail string
	// Background is the task id of a Bash command that was moved to the
	// background, still running (then ExitCode is nil).
	Background string
}

// Usage counts tokens the way the Anthropic API reports them.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	ThinkingTokens      int64 `json:"thinking_tokens"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:         u.InputTokens + v.InputTokens,
		OutputTokens:        u.OutputTokens + v.OutputTokens,
		CacheReadTokens:     u.CacheReadTokens + v.CacheReadTokens,
		CacheCreationTokens: u.CacheCreationTokens + v.CacheCreationTokens,
		ThinkingTokens:      u.ThinkingTokens + v.ThinkingTokens,
	}
}

// Denial is a tool call the permission layer refused.
type Denial struct {
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
}

// Result is the harness's final `result` line.
type Result struct {
	Subtype           string // success | error_max_turns | error_during_execution | …
	IsError           bool
	Text              string
	NumTurns          int
	Usage             Usage
	TotalCostUSD      float64 // at the harness's own (Anthropic) prices; informative only
	PermissionDenials []Denial
	SessionID         string
	TerminalReason    string
}

// Succeeded is true only for a successful result with a non-empty answer:
// the one case a job may be reported `done`.
func (r *Result) Succeeded() bool {
	return r != nil && !r.IsError && r.Subtype == "success" && r.Text != ""
}

// ErrNoBinary means no Claude Code binary was found.
var ErrNoBinary = errors.New("Claude Code binary not found: set BRIDGE_CLAUDE_BIN to its path, or run `scripts/install.sh claude` (pinned install in .cache/bin/claude), or put `claude` on PATH")

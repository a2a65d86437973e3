package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// PromptServerName and PromptToolName make the harness flag
// `--permission-prompt-tool mcp__bridge__approve`.
const (
	PromptServerName = "bridge"
	PromptToolName   = "approve"
	PromptToolFlag   = "mcp__" + PromptServerName + "__" + PromptToolName
)

// Approval modes of PromptConfig.
const (
	ModeOn  = "on"
	ModeOff = "off" // BRIDGE_CC_APPROVAL=off: "ask" becomes allow; deny stays deny
)

// PromptConfig is what the approval child needs to serve one job. The daemon
// writes it into the job's private harness dir in the state dir (which the
// job cannot read or write), and the child reads it from there: never from
// the environment or anything the job controls.
type PromptConfig struct {
	JobID        string
	Workspace    string
	StateDir     string
	Allow        []string
	Protected    []string
	Timeout      time.Duration
	ApprovalMode string // ModeOn (default) or ModeOff

	// Stderr receives the child's log lines (nil: discarded). Not stored.
	Stderr io.Writer
}

type promptConfigFile struct {
	Version      int      `json:"version"`
	JobID        string   `json:"job_id"`
	Workspace    string   `json:"workspace"`
	StateDir     string   `json:"state_dir"`
	Allow        []string `json:"allow"`
	Protected    []string `json:"protected"`
	TimeoutMS    int64    `json:"timeout_ms"`
	ApprovalMode string   `json:"approval_mode"`
}

// PromptConfigPath is where the daemon writes a job's PromptConfig.
func PromptConfigPath(dir statedir.Dir, jobID string) string {
	return filepath.Join(dir.HarnessDir(jobID), "approval.json")
}

// WritePromptConfig validates cfg and writes it atomically with mode 0600.
func WritePromptConfig(path string, cfg PromptConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	return statedir.WriteJSON(path, promptConfigFile{
		Version: statedir.FormatVersion, JobID: cfg.JobID, Workspace: cfg.Workspace, StateDir: cfg.StateDir,
		Allow: cfg.Allow, Protected: cfg.Protected, TimeoutMS: cfg.Timeout.Milliseconds(), ApprovalMode: cfg.mode(),
	})
}

// LoadPromptConfig reads and validates a PromptConfig written by WritePromptConfig.
func LoadPromptConfig(path string) (PromptConfig, error) {
	var f promptConfigFile
	if err := statedir.ReadJSON(path, &f); err != nil {
		return PromptConfig{}, fmt.Errorf("approval config: %w", err)
	}
	if f.Version != statedir.FormatVersion {
		return PromptConfig{}, fmt.Errorf("approval config %s: version %d, want %d", path, f.Version, statedir.FormatVersion)
	}
	cfg := PromptConfig{JobID: f.JobID, Workspace: f.Workspace, StateDir: f.StateDir, Allow: f.Allow,
		Protected: f.Protected, Timeout: time.Duration(f.TimeoutMS) * time.Millisecond, ApprovalMode: f.ApprovalMode}
	if err := cfg.validate(); err != nil {
		return PromptConfig{}, fmt.Errorf("approval config %s: %w", path, err)
	}
	return cfg, nil
}

func (c PromptConfig) mode() string {
	if c.ApprovalMode == "" {
		return ModeOn
	}
	return c.ApprovalMode
}

func (c PromptConfig) validate() error {
	switch {
	case c.JobID == "":
		return errors.New("approval config: no job id")
	case !filepath.IsAbs(c.Workspace):
		return fmt.Errorf("approval config: workspace %q is not absolute", c.Workspace)
	case !filepath.IsAbs(c.StateDir):
		return fmt.Errorf("approval config: state dir %q is not absolute", c.StateDir)
	case c.Timeout <= 0:
		return fmt.Errorf("approval config: timeout %s must be positive", c.Timeout)
	case c.mode() != ModeOn && c.mode() != ModeOff:
		return fmt.Errorf("approval config: approval mode %q is neither %q nor %q", c.ApprovalMode, ModeOn, ModeOff)
	}
	return nil
}

// Answer is the permission prompt tool's reply, as Claude Code expects it.
type Answer struct {
	Behavior     string         `json:"behavior"` // "allow" or "deny"
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
	Message      string         `json:"message,omitempty"`
}

func allowAnswer(input map[string]any) Answer {
	if input == nil {
		input = map[string]any{}
	}
	return Answer{Behavior: "allow", UpdatedInput: input}
}

func denyAnswer(msg string) Answer { return Answer{Behavior: "deny", Message: msg} }

// Prompter answers permission prompts for one job.
type Prompter struct {
	cfg   PromptConfig
	dir   statedir.Dir
	queue *Queue
	log   zerolog.Logger
}

// NewPrompter opens the state dir and the queue for cfg.
func NewPrompter(cfg PromptConfig, log zerolog.Logger) (*Prompter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	return &Prompter{cfg: cfg, dir: dir, queue: NewQueue(dir, log), log: log}, nil
}

// Answer classifies one tool call and, when a human must decide, queues it
// and waits. Rules' denials and every non-approval of a queued request become
// a deny with the instruction not to work around it. With approval off (the
// config's mode, or the flag file) an "ask" is allowed without asking, said
// loudly in the log and the audit log; a rules' deny still stands, and the OS
// sandbox still applies.
func (p *Prompter) Answer(ctx context.Context, req Request) Answer {
	v := Classify(req, Policy{Workspace: p.cfg.Workspace, Allow: p.cfg.Allow, Protected: p.cfg.Protected})
	p.queue.audit(AuditRecord{Event: EventRequest, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Verdict: v.Decision, Reason: v.Reason})
	switch v.Decision {
	case Allow:
		p.queue.audit(AuditRecord{Event: EventAuto, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Input: displayInput(req.Input), Decision: Allow, Reason: v.Reason, By: "rules"})
		return allowAnswer(req.Input)
	case Ask:
	default:
		p.queue.audit(AuditRecord{Event: EventAuto, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Input: displayInput(req.Input), Decision: Deny, Reason: v.Reason, By: "rules"})
		return denyAnswer("Denied by the bridge's approval rules: " + v.Reason + ". Do not try to work around this denial; report it in your final answer.")
	}
	if src := p.approvalOffSource(); src != "" {
		reason := "HUMAN APPROVAL IS OFF (" + src + "): allowed without asking a human; the OS sandbox still applies. The rules said: " + v.Reason
		p.queue.audit(AuditRecord{Event: EventApprovalOff, JobID: p.cfg.JobID, Tool: req.Tool, Summary: v.Summary, Verdict: Ask, Decision: Allow, Reason: reason, By: src})
		p.log.Warn().Str("job", p.cfg.JobID).Str("tool", req.Tool).Str("summary", v.Summary).Msg(reason)
		return allowAnswer(req.Input)
	}
	d, err := p.queue.Submit(ctx, p.cfg.JobID, req, v, p.cfg.Timeout)
	if err != nil {
		p.log.Error().Err(err).Str("job", p.cfg.JobID).Msg("approval request failed: denied")
	}
	if d.Approved {
		return allowAnswer(req.Input)
	}
	return denyAnswer(d.Message())
}

func (p *Prompter) approvalOffSource() string {
	switch {
	case p.cfg.mode() == ModeOff:
		return "BRIDGE_CC_APPROVAL=off"
	case ApprovalOff(p.dir):
		return "flag " + p.dir.ApprovalOffFlag()
	}
	return ""
}

// promptTool is the "approve" tool: its schema and its handler.
func promptTool(p *Prompter) (mcp.Tool, server.ToolHandlerFunc) {
	tool := mcp.NewTool(PromptToolName,
		mcp.WithDescription("Permission prompt for the bridge's agent jobs: decides whether a harness tool call may run."),
		mcp.WithString("tool_name", mcp.Required(), mcp.Description("The tool the harness wants to call.")),
		mcp.WithObject("input", mcp.Description("The tool call's input.")),
		mcp.WithString("tool_use_id", mcp.Description("The harness's id of the tool call.")),
		mcp.WithTitleAnnotation("Approve a tool call"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	handler := func(ctx context.Context, call mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := call.GetArguments()
		name, _ := args["tool_name"].(string)
		input, _ := args["input"].(map[string]any)
		if raw, ok := args["input"]; ok && raw != nil && input == nil {
			// Not an object: let the rules see it as malformed.
			input = map[string]any{"_malformed_input": raw}
			name = ""
		}
		ans := p.Answer(ctx, Request{Tool: name, Input: input})
		b, err := json.Marshal(ans)
		if err != nil {
			b = []byte(`{"behavior":"deny","message":"Denied: the approval answer could not be encoded. Do not try to work around this denial; report it in your final answer."}`)
		}
		return mcp.NewToolResultText(string(b)), nil
	}
	return tool, handler
}

// Limits of the approval child: concurrent tool calls, and calls queued
// beyond those (mcp-go answers the rest synchronously).
const (
	promptWorkers = 32
	promptQueue   = 256
)

// Version is reported in the approval child's serverInfo.
var Version = "dev"

// RunPrompt serves the approval child: a stdio MCP server named "bridge"
// with one tool, "approve", reading JSON-RPC lines from in and writing them to
// out until in ends or ctx is done. Requests still waiting for a human when
// it ends are denied.
func RunPrompt(ctx context.Context, cfg PromptConfig, in io.Reader, out io.Writer) error {
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	logger := zerolog.New(stderr).With().Timestamp().Str("component", "approval-prompt").Str("job", cfg.JobID).Logger()
	p, err := NewPrompter(cfg, logger)
	if err != nil {
		return err
	}
	s := server.NewMCPServer(PromptServerName, Version, server.WithToolCapabilities(false))
	s.AddTool(promptTool(p))
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(stderr, "approval-prompt: ", log.LstdFlags))
	// Each tool call may wait minutes for a human; enough workers that calls
	// the rules answer at once never queue behind those.
	server.WithWorkerPoolSize(promptWorkers)(stdio)
	server.WithQueueSize(promptQueue)(stdio)
	if err := stdio.Listen(ctx, in, out); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("approval prompt: %w", err)
	}
	return nil
}

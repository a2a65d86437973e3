package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// ChildConfig is all a job's approval child knows: the daemon's approval
// service, the job's token, and the rules' inputs. The child answers
// nothing itself: it classifies each tool call in the job's own view of the
// filesystem (where the job's links and its overlay are), forwards the call
// with that verdict, and hands Claude Code the daemon's answer; any failure
// to reach the daemon is a deny. The verdict it sends can only make the
// daemon's stricter (Prompter.AnswerCall).
type ChildConfig struct {
	JobID string
	URL   string // the service's loopback URL (Service.URL)
	Token string
	Rules rules.Policy
}

type childFile struct {
	Version   int              `json:"version"`
	JobID     string           `json:"job_id"`
	URL       string           `json:"url"`
	Token     string           `json:"token"`
	Workspace string           `json:"workspace"`
	Allow     []string         `json:"allow"`
	Protected []string         `json:"protected"`
	Policy    *policy.Enforced `json:"policy,omitempty"`
	Jailed    bool             `json:"jailed,omitempty"`
}

// ConfigPath is where the daemon writes a job's ChildConfig.
func ConfigPath(dir statedir.Dir, jobID string) string {
	return filepath.Join(dir.HarnessDir(jobID), "approval.json")
}

// WriteChildConfig writes c atomically with mode 0600 (no fsync: the file
// is useless after a power loss, which ends the job).
func WriteChildConfig(path string, c ChildConfig) error {
	if err := c.validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(childFile{Version: statedir.FormatVersion, JobID: c.JobID, URL: c.URL, Token: c.Token,
		Workspace: c.Rules.Workspace, Allow: c.Rules.Allow, Protected: c.Rules.Protected, Policy: c.Rules.Job, Jailed: c.Rules.Jailed}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return statedir.WriteFileAtomicNoSync(path, append(b, '\n'))
}

// LoadChildConfig reads and validates a ChildConfig written by
// WriteChildConfig.
func LoadChildConfig(path string) (ChildConfig, error) {
	var f childFile
	if err := statedir.ReadJSON(path, &f); err != nil {
		return ChildConfig{}, fmt.Errorf("approval config: %w", err)
	}
	if f.Version != statedir.FormatVersion {
		return ChildConfig{}, fmt.Errorf("approval config %s: version %d, want %d", path, f.Version, statedir.FormatVersion)
	}
	c := ChildConfig{JobID: f.JobID, URL: f.URL, Token: f.Token,
		Rules: rules.Policy{Workspace: f.Workspace, Allow: f.Allow, Protected: f.Protected, Job: f.Policy, Jailed: f.Jailed}}
	if err := c.validate(); err != nil {
		return ChildConfig{}, fmt.Errorf("approval config %s: %w", path, err)
	}
	return c, nil
}

func (c ChildConfig) validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.JobID == "":
		return errors.New("approval config: no job id")
	case c.Token == "":
		return errors.New("approval config: no token")
	case !filepath.IsAbs(c.Rules.Workspace):
		return fmt.Errorf("approval config: workspace %q is not absolute", c.Rules.Workspace)
	case err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "":
		return fmt.Errorf("approval config: the approval service %q is not an http://127.0.0.1:PORT URL", c.URL)
	}
	return nil
}

// childClient talks to the service alone: no proxy from the environment,
// and no redirect followed (an answer comes from the URL in the config or
// from nowhere).
var childClient = &http.Client{
	Transport:     &http.Transport{Proxy: nil, DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// ask classifies one call in the job's view, posts it with that verdict to
// the daemon and returns the daemon's answer; anything but a readable answer
// is a deny that says why.
func (c ChildConfig) ask(ctx context.Context, q question) Answer {
	v := rules.Classify(q.request(), c.Rules)
	q.View = &v
	body, err := json.Marshal(q)
	if err != nil {
		return denyAnswer("Denied: the tool call could not be encoded for the bridge. Do not try to work around this denial; report it in your final answer.")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return unreachable(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := childClient.Do(req)
	if err != nil {
		return unreachable(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 2*maxQuestionBytes))
	if err != nil {
		return unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		return unreachable(fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b))))
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil || (a.Behavior != "allow" && a.Behavior != "deny") {
		return unreachable(fmt.Errorf("unreadable answer %q", b))
	}
	return a
}

func unreachable(err error) Answer {
	return denyAnswer("Denied: the bridge's approval service did not answer (" + err.Error() + "). Do not try to work around this denial; report it in your final answer.")
}

// promptTool is the "approve" tool: its schema, and a handler that hands
// each call to answer.
func promptTool(answer func(context.Context, question) Answer) (mcp.Tool, server.ToolHandlerFunc) {
	tool := mcp.NewTool(ToolName,
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
		var q question
		q.ToolName, _ = args["tool_name"].(string)
		q.Input, _ = args["input"].(map[string]any)
		if raw, ok := args["input"]; ok && raw != nil && q.Input == nil {
			// Not an object: the rules see it as malformed.
			q.Malformed, q.ToolName = raw, ""
		}
		q.ToolUseID, _ = args["tool_use_id"].(string)
		b, err := json.Marshal(answer(ctx, q))
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

// RunChild serves the approval child: a stdio MCP server named "bridge"
// with one tool, "approve", whose every call is answered by the daemon's
// approval service (ChildConfig.ask). It reads JSON-RPC lines from in and
// writes them to out until in ends or ctx is done; stderr gets its log.
func RunChild(ctx context.Context, c ChildConfig, in io.Reader, out, stderr io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	if stderr == nil {
		stderr = io.Discard
	}
	return serveStdio(ctx, c.ask, in, out, stderr)
}

func serveStdio(ctx context.Context, answer func(context.Context, question) Answer, in io.Reader, out, stderr io.Writer) error {
	s := server.NewMCPServer(ServerName, Version, server.WithToolCapabilities(false))
	s.AddTool(promptTool(answer))
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

package demo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// agentTask is what the demo asks the agent to do.
const agentTask = "Read witness.txt in the workspace and write its content reversed to answer.txt."

// agentAnswer is the harness's final text, scripted in the double.
const agentAnswer = "I read witness.txt and wrote its content reversed to answer.txt."

// agentPayload is the structuredContent of the agent tools, as a client sees it.
type agentPayload struct {
	JobID        string          `json:"job_id"`
	Status       string          `json:"status"`
	Nonce        string          `json:"nonce"`
	Result       string          `json:"result"`
	Error        string          `json:"error"`
	Steps        int             `json:"steps"`
	ElapsedMS    int64           `json:"elapsed_ms"`
	Usage        json.RawMessage `json:"usage"`
	CostUSD      float64         `json:"cost_usd"`
	FilesWritten []string        `json:"files_written"`
	Commands     json.RawMessage `json:"commands"`
	Approval     json.RawMessage `json:"approval"`
}

var finalStatuses = []string{"done", "done_unverified", "error", "cancelled", "interrupted"}

// agentStep runs a whole agent job offline: the real Claude Code harness,
// driven by the double's Anthropic side, reads a random witness and writes it
// reversed; the step checks the bytes on disk and the nonce.
func agentStep() Step {
	witness := randomWitness()
	var workspace string
	return Step{
		Name: "deepseek_agent_start (an agent job through the real Claude Code harness)",
		Setup: func(dir string) (map[string]string, []deepseektest.ScriptTurn, error) {
			workspace = filepath.Join(dir, "workspace")
			if err := os.MkdirAll(workspace, 0o700); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(workspace, "witness.txt"), []byte(witness), 0o600); err != nil {
				return nil, nil, err
			}
			env := map[string]string{"DEEPSEEK_ALLOWED_ROOTS": dir}
			if _, err := exec.LookPath("bwrap"); err != nil {
				// Without bubblewrap the daemon refuses agent jobs unless told
				// otherwise; the demo says so instead of failing.
				env["BRIDGE_SANDBOX"] = "off"
			}
			script := []deepseektest.ScriptTurn{
				{Side: "anthropic", ToolCalls: []deepseektest.ToolCall{
					deepseektest.Call("Read", map[string]any{"file_path": filepath.Join(workspace, "witness.txt")}),
				}},
				{Side: "anthropic", ToolCalls: []deepseektest.ToolCall{
					deepseektest.Call("Write", map[string]any{"file_path": filepath.Join(workspace, "answer.txt"), "content": reverse(witness)}),
				}},
				{Side: "anthropic", Text: agentAnswer},
			}
			return env, script, nil
		},
		Run: func(ctx context.Context, e *Env) error { return runAgent(ctx, e, workspace, witness) },
	}
}

func runAgent(ctx context.Context, e *Env, workspace, witness string) error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		fmt.Fprintln(e.Out, "note: bubblewrap is not installed, so this job runs with BRIDGE_SANDBOX=off (scripts/install.sh apt installs it)")
	} else {
		fmt.Fprintln(e.Out, "sandbox: on — the job's commands run under bubblewrap (Claude Code's sandbox)")
	}
	fmt.Fprintf(e.Out, "task: %s\nworkspace: %s (witness.txt holds %d random characters)\n", agentTask, workspace, len(witness))
	res, err := callTool(ctx, e.Session, "deepseek_agent_start", map[string]any{"task": agentTask, "workspace": workspace}, "demo-agent")
	if err != nil {
		return fmt.Errorf("tools/call deepseek_agent_start: %w", err)
	}
	p, err := decodeAgent(res)
	if err != nil {
		return err
	}
	for !slices.Contains(finalStatuses, p.Status) {
		fmt.Fprintf(e.Out, "  job %s is %s after %d tool call(s); polling\n", p.JobID, p.Status, p.Steps)
		if p.Status == "waiting_approval" {
			return fmt.Errorf("the job waits for a human (approval %s), which this demo does not script", p.Approval)
		}
		res, err = callTool(ctx, e.Session, "deepseek_agent_poll", map[string]any{"job_id": p.JobID, "wait_seconds": 20}, "")
		if err != nil {
			return fmt.Errorf("tools/call deepseek_agent_poll: %w", err)
		}
		if p, err = decodeAgent(res); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.Out, "text for the calling model:\n  %s\n", strings.ReplaceAll(strings.TrimSpace(resultText(res)), "\n", "\n  "))
	handoff, _ := json.MarshalIndent(res.StructuredContent, "  ", "  ")
	fmt.Fprintf(e.Out, "structured handoff (structuredContent):\n  %s\n", handoff)
	if p.Status != "done" && p.Status != "done_unverified" {
		return fmt.Errorf("the job ended %s: %s", p.Status, p.Error)
	}
	if len(p.Nonce) < 24 || !strings.Contains(resultText(res), p.Nonce) {
		return fmt.Errorf("a done job must carry a nonce of at least 96 bits, quoted in its text; got %q", p.Nonce)
	}
	got, err := os.ReadFile(filepath.Join(workspace, "answer.txt"))
	if err != nil {
		return fmt.Errorf("answer.txt: %w", err)
	}
	if string(got) != reverse(witness) {
		return fmt.Errorf("answer.txt holds %q, want the witness reversed %q", got, reverse(witness))
	}
	fmt.Fprintf(e.Out, "ok: job %s is done with nonce %s; answer.txt holds the witness reversed, byte for byte\n", p.JobID, p.Nonce)
	return nil
}

func decodeAgent(res *mcp.CallToolResult) (agentPayload, error) {
	var p agentPayload
	if res.IsError {
		return p, fmt.Errorf("the agent tool returned an error result: %s", resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return p, fmt.Errorf("structuredContent: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("structuredContent %s: %w", b, err)
	}
	return p, nil
}

// randomWitness is 32 characters the model could not guess.
func randomWitness() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

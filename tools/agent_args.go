package tools

import (
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// The arguments deepseek_agent_start and deepseek_agent_continue share: their
// schema (the ceilings, the policy) and what a call's values become.

// jobArgs are the arguments deepseek_agent_start and deepseek_agent_continue
// share; absent ceilings are 0, the owner's.
type jobArgs struct {
	Task           string         `json:"task"`
	MaxSteps       int            `json:"max_steps"`
	TimeoutSeconds float64        `json:"timeout_seconds"`
	Model          string         `json:"model"`
	Thinking       string         `json:"thinking"`
	Policy         *policy.Policy `json:"policy"`
}

// startArgs are deepseek_agent_start's arguments.
type startArgs struct {
	jobArgs
	Workspace  string       `json:"workspace"`
	Context    string       `json:"context"`
	Acceptance []jobs.Check `json:"acceptance"`
	// Mode is the TypeScript bridge's argument, accepted and ignored.
	Mode string `json:"mode"`
}

// tsModeArg is the mode argument the TypeScript bridge took on
// deepseek_agent_start and ignored: hosts configured for it still call
// with it, so it is accepted, and ignored here too.
func tsModeArg() mcp.ToolOption {
	return mcp.WithString("mode", mcp.Description("ignored (accepted for callers of the TypeScript bridge): what a job may do is its policy's"))
}

// contextArg is deepseek_agent_start's context.
func contextArg() mcp.ToolOption {
	return mcp.WithString("context", mcp.MaxLength(jobs.MaxContextBytes), mcp.Description("what the agent should know beyond the task (background, constraints, what was tried); told it after the task"))
}

// acceptanceArg is deepseek_agent_start's acceptance checks.
func acceptanceArg() mcp.ToolOption {
	return mcp.WithArray("acceptance", mcp.MaxItems(jobs.MaxChecks), mcp.Description(
		"checks the work must pass: one with a command is met only when the job itself ran exactly that command, exit 0, after its last change; the payload says met, not_met, not_checked or judgement (no command) for each, and acceptance_ready"),
		mcp.Items(map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"check"},
			"properties": map[string]any{
				"check":   map[string]any{"type": "string", "description": "what must hold, in a sentence"},
				"command": map[string]any{"type": "string", "description": "the one-line command whose successful run is the evidence, e.g. make test"},
			},
		}))
}

func (a jobArgs) ceilings() (maxSteps int, timeout time.Duration) {
	return a.MaxSteps, time.Duration(a.TimeoutSeconds * float64(time.Second))
}

// stepsArg and timeoutArg are the ceilings of a job (of = "job") or of a
// continued job's leg (of = "leg"), within the owner's.
func stepsArg(o AgentToolOptions, of string) mcp.ToolOption {
	return mcp.WithInteger("max_steps", mcp.Min(1), mcp.Max(float64(o.MaxSteps)), mcp.Description(fmt.Sprintf("tool-call ceiling for this %s (at most %d, the default)", of, o.MaxSteps)))
}

func timeoutArg(o AgentToolOptions, of string) mcp.ToolOption {
	return mcp.WithNumber("timeout_seconds", mcp.Min(1), mcp.Max(float64(o.JobTimeout/time.Second)), mcp.Description(fmt.Sprintf("wall-clock ceiling for this %s in seconds (at most %d, the default)", of, int(o.JobTimeout/time.Second))))
}

// policyArg is deepseek_agent_start's policy argument: every field of
// policy.Policy, each optional, nothing else. For deepseek_agent_continue
// (brief) the fields go undescribed: its description points at
// deepseek_agent_start's, which the host's model has already read, and
// every host pays for tools/list's bytes.
func policyArg(o AgentToolOptions, brief bool) mcp.ToolOption {
	strs := func(desc string) map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
	}
	modes := []string{policy.Ask, policy.Deny}
	desc := "what this job may do, all fields optional; the owner's floor (BRIDGE_POLICY_FLOOR_FILE) is merged over it, so it can only narrow. " +
		"The payload's policy shows what was enforced, and its ledger every tool call with its verdict."
	props := policyProps(o, strs, modes)
	if brief {
		desc = "narrows the ended job's policy: the fields of deepseek_agent_start's policy"
		for _, p := range props {
			delete(p.(map[string]any), "description")
		}
	}
	return mcp.WithObject("policy", mcp.AdditionalProperties(false), mcp.Description(desc), mcp.Properties(props))
}

// policyProps are the policy argument's fields.
func policyProps(o AgentToolOptions, strs func(string) map[string]any, modes []string) map[string]any {
	return map[string]any{"tools": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": policy.Tools},
		"description": `the only tools the job is offered; ["Read","Grep","Glob"] is a read-only job, and leaving Bash out means no commands`},
		"write_paths":          strs(`globs relative to the workspace the job may write ("out/**"); writes elsewhere are refused without asking; [] makes the job read-only (the OS sandbox too)`),
		"deny_paths":           strs(`globs (relative to the workspace, or absolute) never read or written`),
		"commands":             strs(`exact command lines, or program names, that may run unattended (within the owner's allow list); anything else goes to a human, or is refused with on_other_commands "deny"`),
		"on_other_commands":    map[string]any{"type": "string", "enum": modes, "description": "ask (default): a command not in commands goes to a human; deny: it is refused"},
		"network":              map[string]any{"type": "string", "enum": modes, "description": "ask (default): WebFetch and WebSearch go to a human; deny: they are not offered"},
		"land":                 map[string]any{"type": "string", "enum": []string{policy.LandAuto, policy.LandReview}, "description": "auto (default): the job's changes land in the workspace when it ends; review: they wait for the owner's `bridgectl jobs ID --apply`. Dotfiles, dependencies, binaries and git's internals wait for the owner either way"},
		"max_steps":            map[string]any{"type": "integer", "minimum": 1, "maximum": o.MaxSteps, "description": "tool-call ceiling"},
		"timeout_seconds":      map[string]any{"type": "number", "minimum": 1, "maximum": int(o.JobTimeout / time.Second), "description": "wall-clock ceiling in seconds"},
		"max_cost_usd":         map[string]any{"type": "number", "minimum": 0, "description": "the job is stopped once its model calls cost more than this (USD, at DeepSeek prices)"},
		"append_system_prompt": map[string]any{"type": "string", "description": "your contract text, appended to the agent's system prompt"},
	}
}

// checkPolicy checks the policy argument beyond its schema (nil: none given).
func (a jobArgs) checkPolicy() error {
	if a.Policy == nil {
		return nil
	}
	if err := a.Policy.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

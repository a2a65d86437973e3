package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// policyArg is deepseek_agent_start's policy argument: every field of
// policy.Policy, each optional, nothing else.
func policyArg(o AgentToolOptions) mcp.ToolOption {
	strs := func(desc string) map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
	}
	modes := []string{policy.Ask, policy.Deny}
	return mcp.WithObject("policy", mcp.AdditionalProperties(false), mcp.Description(
		"what this job may do, all fields optional; the owner's floor (BRIDGE_POLICY_FLOOR_FILE) is merged over it, so it can only narrow. "+
			"The payload's policy shows what was enforced, and its ledger every tool call with its verdict."),
		mcp.Properties(map[string]any{
			"tools": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": policy.Tools},
				"description": `the only tools the job is offered; ["Read","Grep","Glob"] is a read-only job, and leaving Bash out means no commands`},
			"write_paths":          strs(`globs relative to the workspace the job may write ("out/**"); writes elsewhere are refused without asking; [] makes the job read-only (the OS sandbox too)`),
			"deny_paths":           strs(`globs (relative to the workspace, or absolute) never read or written`),
			"commands":             strs(`exact command lines, or program names, that may run unattended (within the owner's allow list); anything else goes to a human, or is refused with on_other_commands "deny"`),
			"on_other_commands":    map[string]any{"type": "string", "enum": modes, "description": "ask (default): a command not in commands goes to a human; deny: it is refused"},
			"network":              map[string]any{"type": "string", "enum": modes, "description": "ask (default): WebFetch and WebSearch go to a human; deny: they are not offered"},
			"max_steps":            map[string]any{"type": "integer", "minimum": 1, "maximum": o.MaxSteps, "description": "tool-call ceiling"},
			"timeout_seconds":      map[string]any{"type": "number", "minimum": 1, "maximum": int(o.JobTimeout / time.Second), "description": "wall-clock ceiling in seconds"},
			"max_cost_usd":         map[string]any{"type": "number", "minimum": 0, "description": "the job is stopped once its model calls cost more than this (USD, at DeepSeek prices)"},
			"append_system_prompt": map[string]any{"type": "string", "description": "your contract text, appended to the agent's system prompt"},
		}),
	)
}

// policyOf decodes the checked policy argument; nil when the call gave none.
func policyOf(a args) (*policy.Policy, error) {
	raw, ok := a.vals["policy"]
	if !ok || raw == nil {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var p policy.Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return &p, nil
}

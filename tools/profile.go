package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Profiles are the named sets of tools an owner can offer (BRIDGE_TOOLS):
// each costs every host's model the tokens of its tools/list.
var Profiles = map[string][]string{
	"flash":  {"deepseek_flash", "deepseek_models"},
	"agent":  {"deepseek_models", "deepseek_agent_start", "deepseek_agent_poll", "deepseek_agent_cancel", "deepseek_agent_continue", "deepseek_agent_message", "deepseek_agent_list", "deepseek_agent_fetch", "deepseek_review"},
	"review": {"deepseek_models", "deepseek_review", "deepseek_agent_poll", "deepseek_agent_cancel", "deepseek_agent_fetch"},
}

// Select keeps the tools of list that names name: profiles (Profiles, or
// "all") and tool names, in any mix; none names them all. A name that is
// neither is an error that lists what is known.
func Select(list []mcpserver.ServerTool, names []string) ([]mcpserver.ServerTool, error) {
	if len(names) == 0 || slices.Contains(names, "all") {
		return list, nil
	}
	known := map[string]bool{}
	for _, t := range list {
		known[t.Tool.Name] = true
	}
	want := map[string]bool{}
	for _, n := range names {
		switch p, ok := Profiles[n]; {
		case ok:
			for _, t := range p {
				want[t] = true
			}
		case known[n]:
			want[n] = true
		default:
			return nil, fmt.Errorf("BRIDGE_TOOLS: %q is neither a profile (all, %s) nor a tool this bridge serves (%s)",
				n, strings.Join(slices.Sorted(maps.Keys(Profiles)), ", "), strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	var out []mcpserver.ServerTool
	for _, t := range list {
		if want[t.Tool.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

// compactOutput serves a tool's output schema as what a host checks: the
// fields every result carries (the schema's required ones), typed, with
// any other field allowed. The full schema (its Go type's, with every
// description) stays the tests' contract (TestAgentPayloadMatchesItsOutputSchema);
// served in full it was 13 KB per agent tool, six times over. A "null" in a
// field's type is dropped: those fields are never sent as null (the
// payload tests hold it), and the MCP Inspector warns on nullable types.
func compactOutput(t mcpserver.ServerTool) mcpserver.ServerTool {
	if t.Tool.OutputSchema.Type == "" {
		return t
	}
	// A schema made from a Go type always marshals and reads back.
	b, _ := json.Marshal(t.Tool.OutputSchema)
	var full struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(b, &full)
	props := map[string]any{}
	for _, name := range full.Required {
		props[name] = map[string]any{"type": nonNull(full.Properties[name]["type"])}
	}
	t.Tool.RawOutputSchema, _ = json.Marshal(map[string]any{"type": "object", "required": full.Required, "properties": props})
	t.Tool.OutputSchema = mcp.ToolOutputSchema{} // one or the other: mcp-go refuses both
	return t
}

// nonNull is a schema type without "null".
func nonNull(typ any) any {
	list, ok := typ.([]any)
	if !ok {
		return typ
	}
	var out []any
	for _, x := range list {
		if x != "null" {
			out = append(out, x)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// maxToolList bounds what tools/list costs every host's model: the full
// profile's tools, as hosts receive them, in compact JSON.
const maxToolList = 20 << 10

// TestToolListSizePerProfile prints what each profile costs and holds the
// full list under maxToolList.
func TestToolListSizePerProfile(t *testing.T) {
	list := List(Options{Flash: &fakeFlash{}, Jobs: noJobs{}})
	for _, profile := range []string{"all", "agent", "review", "flash"} {
		sel, err := Select(list, []string{profile})
		if err != nil {
			t.Fatal(err)
		}
		var tools []any
		for _, st := range sel {
			tools = append(tools, st.Tool)
		}
		b, err := json.Marshal(map[string]any{"tools": tools})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("BRIDGE_TOOLS=%-6s %d tools, tools/list %5d bytes", profile, len(sel), len(b))
		if profile == "all" && len(b) > maxToolList {
			t.Errorf("the full tools/list is %d bytes, more than %d", len(b), maxToolList)
		}
	}
}

func TestSelectOffersTheProfileOrTheNames(t *testing.T) {
	list := List(Options{Flash: &fakeFlash{}, Jobs: noJobs{}})
	names := func(names ...string) []string {
		sel, err := Select(list, names)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range sel {
			out = append(out, st.Tool.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); len(got) != len(list) {
		t.Errorf("no setting: %v", got)
	}
	if got := names("flash"); !slices.Equal(got, []string{"deepseek_flash", "deepseek_models"}) {
		t.Errorf("flash: %v", got)
	}
	if got := names("review", "deepseek_flash"); !slices.Equal(got, []string{"deepseek_agent_cancel", "deepseek_agent_fetch", "deepseek_agent_poll", "deepseek_flash", "deepseek_models", "deepseek_review"}) {
		t.Errorf("review plus a name: %v", got)
	}
	if _, err := Select(list, []string{"deepseek_flsh"}); err == nil || !strings.Contains(err.Error(), `"deepseek_flsh" is neither a profile (all, agent, flash, review) nor a tool`) {
		t.Errorf("a misspelt name: %v", err)
	}
	// A registry without jobs serves no agent tool: the agent profile is then
	// deepseek_models alone.
	sel, err := Select(List(Options{Flash: &fakeFlash{}}), []string{"agent"})
	if err != nil || len(sel) != 1 || sel[0].Tool.Name != "deepseek_models" {
		t.Errorf("agent without jobs: %v %v", sel, err)
	}
}

// The served output schema keeps what a host checks — every required
// field, typed, none nullable — and lets the rest through.
func TestServedOutputSchemaIsCompact(t *testing.T) {
	for _, st := range List(Options{Flash: &fakeFlash{}, Jobs: noJobs{}}) {
		var s struct {
			Type       string                    `json:"type"`
			Required   []string                  `json:"required"`
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(st.Tool.RawOutputSchema, &s); err != nil || s.Type != "object" || len(s.Required) == 0 {
			t.Fatalf("%s: output schema %s (%v)", st.Tool.Name, st.Tool.RawOutputSchema, err)
		}
		for _, r := range s.Required {
			typ, ok := s.Properties[r]["type"].(string)
			if !ok || typ == "null" {
				t.Errorf("%s: required %s has type %v", st.Tool.Name, r, s.Properties[r]["type"])
			}
		}
		if strings.Contains(string(st.Tool.RawOutputSchema), "null") {
			t.Errorf("%s: a nullable type is served: %s", st.Tool.Name, st.Tool.RawOutputSchema)
		}
	}
}

package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// TestInitializeAndLogging: the production build answers logging/setLevel
// (the conformance build differs only by its fixture tools), and the
// instructions name the agent tools exactly when they are served.
func TestInitializeAndLogging(t *testing.T) {
	tests := []struct {
		name  string
		jobs  tools.AgentJobs
		agent bool
	}{
		{"flash only (bridge stdio)", nil, false},
		{"with agent jobs (bridge serve)", &stubJobs{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, Options{Jobs: tt.jobs})
			r := post(t, env.url, initializeBody(1), nil)
			var init struct {
				Capabilities map[string]json.RawMessage `json:"capabilities"`
				Instructions string                     `json:"instructions"`
			}
			msgs := messages(t, r)
			if r.status != 200 || len(msgs) != 1 || json.Unmarshal(msgs[0].Result, &init) != nil {
				t.Fatalf("initialize: %d %q", r.status, r.body)
			}
			if _, ok := init.Capabilities["logging"]; !ok {
				t.Errorf("capabilities %v: no logging", init.Capabilities)
			}
			for _, name := range []string{"deepseek_agent_start", "deepseek_agent_poll", "deepseek_agent_cancel"} {
				if strings.Contains(init.Instructions, name) != tt.agent {
					t.Errorf("instructions mention %s = %v, want %v: %q", name, !tt.agent, tt.agent, init.Instructions)
				}
			}
			if !strings.Contains(init.Instructions, "deepseek_flash") {
				t.Errorf("instructions: %q", init.Instructions)
			}
			r = post(t, env.url, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`, mcpHeaders)
			msgs = messages(t, r)
			if r.status != 200 || len(msgs) != 1 || msgs[0].Error != nil || string(msgs[0].Result) != "{}" {
				t.Fatalf("logging/setLevel: %d %q", r.status, r.body)
			}
		})
	}
}

// TestServedToolsAreTheList: tools/list over the wire shows hosts exactly the
// reviewed snapshots of package tools (tools/testdata/toolsnaps), every one of
// them: registering them (mcp-go's strict default included) changes nothing.
func TestServedToolsAreTheList(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	msgs := messages(t, post(t, env.url, listBody(1), mcpHeaders))
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if len(msgs) != 1 || json.Unmarshal(msgs[0].Result, &list) != nil {
		t.Fatalf("tools/list: %+v", msgs)
	}
	snaps, err := filepath.Glob(filepath.Join("..", "tools", "testdata", "toolsnaps", "*.json"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshots: %v", err)
	}
	served := map[string]any{}
	for _, raw := range list.Tools {
		var tool map[string]any
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		served[tool["name"].(string)] = tool
	}
	if len(served) != len(snaps) {
		t.Errorf("%d tools served, %d snapshotted", len(served), len(snaps))
	}
	for _, path := range snaps {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		if got := served[name]; !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", "  ")
			t.Errorf("tools/list shows %s differently from its snapshot:\n%s", name, g)
		}
	}
}

// BRIDGE_TOOLS chooses what tools/list offers, the instructions follow it,
// and a tool it leaves out is unknown to tools/call.
func TestToolsSettingChoosesTheOfferedTools(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools = []string{"flash"}
	env := newTestEnv(t, Options{Config: cfg, Jobs: &stubJobs{}})
	msgs := messages(t, post(t, env.url, listBody(1), mcpHeaders))
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if len(msgs) != 1 || json.Unmarshal(msgs[0].Result, &list) != nil {
		t.Fatalf("tools/list: %+v", msgs)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"deepseek_flash", "deepseek_models"}) {
		t.Fatalf("BRIDGE_TOOLS=flash offers %v", names)
	}
	call := messages(t, post(t, env.url, callBody(2, "deepseek_agent_start", map[string]any{"task": "x", "workspace": "/w"}, nil), mcpHeaders))
	if last := call[len(call)-1]; last.Error == nil && !strings.Contains(string(last.Result), `"isError":true`) {
		t.Errorf("a tool the profile leaves out was served: %s", last.Result)
	}
	cfg.Tools = []string{"flsh"}
	if _, err := New(Options{Config: cfg, Flash: &fakeFlash{}, Jobs: &stubJobs{}}); err == nil || !strings.Contains(err.Error(), `BRIDGE_TOOLS: "flsh" is neither a profile`) {
		t.Errorf("an unknown name: %v", err)
	}
}

// A job's parts are MCP resources too: job://ID/PART, a page at a time,
// with the next page's offset in the contents' _meta.
func TestJobPartsAreResources(t *testing.T) {
	env := newTestEnv(t, Options{Jobs: &stubJobs{}})
	read := func(uri string) rpcMessage {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": map[string]any{"uri": uri}})
		msgs := messages(t, post(t, env.url, string(b), mcpHeaders))
		if len(msgs) != 1 {
			t.Fatalf("resources/read %s: %+v", uri, msgs)
		}
		return msgs[0]
	}
	var res struct {
		Contents []struct {
			URI  string         `json:"uri"`
			Text string         `json:"text"`
			Meta map[string]any `json:"_meta"`
		} `json:"contents"`
	}
	m := read("job://j1/diff")
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "part diff of j1" {
		t.Fatalf("job://j1/diff: %s %v", m.Result, m.Error)
	}
	m = read("job://j1/ledger?offset=5&limit=4")
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "ledg" || res.Contents[0].Meta["next_offset"] != float64(9) {
		t.Fatalf("job://j1/ledger?offset=5&limit=4: %s %v", m.Result, m.Error)
	}
	if m := read("job://j1/diff?offset=x"); m.Error == nil {
		t.Errorf("a bad offset: %s", m.Result)
	}
}

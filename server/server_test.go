package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInitializeAndLogging: the production build answers logging/setLevel
// (the conformance build differs only by its fixture tools), and the
// instructions name the agent tools exactly when they are served.
func TestInitializeAndLogging(t *testing.T) {
	tests := []struct {
		name  string
		jobs  AgentJobs
		agent bool
	}{
		{"flash only (bridge stdio)", nil, false},
		{"with agent jobs (bridge serve)", &fakeJobs{}, true},
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

package e2e

// Per-call model and thinking, and deepseek_models, end to end: what reaches
// the double is what the call asked for, and the cost uses that model's prices.

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// An agent job with model deepseek-v4-pro reaches the double as that model,
// with the thinking effort asked for (Claude Code's --effort, sent as
// output_config.effort), and its cost is at pro prices; thinking off reaches
// it as thinking disabled. An unknown model or argument is a clear error.
func TestAgentModelAndThinkingPerCall(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	u := dt.Usage{InputTokens: 30_000, CacheHitTokens: 10_000, OutputTokens: 500}
	cs := goSDKClient(t, a.URL())
	for _, c := range []struct {
		thinking, wantType, wantEffort string
	}{
		{"low", "adaptive", "low"},
		{"off", "disabled", ""},
	} {
		a.d.ScriptAnthropic(dt.Text("done").WithUsage(u))
		before := len(a.d.ScriptedAnthropicRequests())
		r := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
			"task": "Say done.", "workspace": a.workspace(t, nil), "model": "deepseek-v4-pro", "thinking": c.thinking,
		}, nil)
		if r.IsError || r.P.Status != "done" {
			t.Fatalf("thinking %s: %s (IsError %v): %s", c.thinking, r.P.Status, r.IsError, r.Text)
		}
		reqs := a.d.ScriptedAnthropicRequests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("thinking %s: %d scripted requests", c.thinking, len(reqs))
		}
		if q := reqs[0]; q.Model() != "deepseek-v4-pro" || q.Thinking() != c.wantType || q.Effort() != c.wantEffort {
			t.Errorf("thinking %s: the double got model %s thinking %q effort %q, want deepseek-v4-pro %q %q",
				c.thinking, q.Model(), q.Thinking(), q.Effort(), c.wantType, c.wantEffort)
		}
		want := deepseek.ProPrice.Cost(u.CacheHitTokens, u.InputTokens-u.CacheHitTokens, u.OutputTokens)
		if math.Abs(r.P.CostUSD-want) > 1e-12 || r.P.Model != "deepseek-v4-pro" || r.P.Thinking != c.thinking {
			t.Errorf("thinking %s: payload model %s thinking %s cost %v, want pro prices %v", c.thinking, r.P.Model, r.P.Thinking, r.P.CostUSD, want)
		}
		if snap := assertSnapshotFile(t, a.dir(), r.P.JobID, "done"); snap.Model != "deepseek-v4-pro" || snap.Thinking != c.thinking {
			t.Errorf("the job record says model %s thinking %s", snap.Model, snap.Thinking)
		}
	}
	for args, want := range map[string]string{
		`{"model":"gpt-5"}`:   `unknown model "gpt-5"; known models: deepseek-flash, deepseek-v4-flash, deepseek-v4-pro`,
		`{"modell":"x"}`:      `unknown argument "modell": this tool takes acceptance, context, max_steps, mode, model, policy, task, thinking, timeout_seconds, workspace`,
		`{"thinking":"max!"}`: `thinking must be one of off, low, high, max, not "max!"`,
	} {
		var extra map[string]any
		if err := json.Unmarshal([]byte(args), &extra); err != nil {
			t.Fatal(err)
		}
		extra["task"], extra["workspace"] = "x", a.workspace(t, nil)
		r := callAgent(t, t.Context(), cs, "deepseek_agent_start", extra, nil)
		if !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("%s: IsError %v: %s", args, r.IsError, r.Text)
		}
	}
}

// deepseek_flash with a model and thinking level: the double's request
// carries both as DeepSeek's API takes them, and the cost is at pro prices.
func TestFlashModelAndThinkingPerCall(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	u := dt.Usage{InputTokens: 1000, CacheHitTokens: 200, OutputTokens: 300, ReasoningTokens: 100}
	d.Script(dt.Reasoned("thinking", "pro answer").WithUsage(u))
	cs := goSDKClient(t, b.URL())
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_flash", Arguments: map[string]any{"task": "x", "model": "deepseek-v4-pro", "thinking": "max"}})
	if err != nil || res.IsError {
		t.Fatalf("flash: %v %+v", err, res)
	}
	var out tools.FlashOutput
	structured(t, res, &out)
	q := d.Requests()[0]
	if q.Model() != "deepseek-v4-pro" || q.Thinking() != "enabled" || q.Effort() != "max" {
		t.Errorf("the double got model %s thinking %q effort %q", q.Model(), q.Thinking(), q.Effort())
	}
	want := deepseek.ProPrice.Cost(u.CacheHitTokens, u.InputTokens-u.CacheHitTokens, u.OutputTokens)
	if out.Model != "deepseek-v4-pro" || out.Thinking != "max" || math.Abs(out.CostUSD-want) > 1e-12 {
		t.Errorf("flash output model %s thinking %s cost %v, want pro prices %v", out.Model, out.Thinking, out.CostUSD, want)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_flash", Arguments: map[string]any{"task": "x", "model": "deepseek-v9"}})
	if err != nil || !res.IsError || len(d.Requests()) != 1 {
		t.Fatalf("unknown model: %v %+v (requests %d)", err, res, len(d.Requests()))
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, `unknown model "deepseek-v9"; known models: deepseek-flash, deepseek-v4-flash, deepseek-v4-pro`) {
		t.Errorf("unknown model: %s", txt)
	}
}

// deepseek_models lists the double's models with prices and the default;
// when the API cannot be reached it says so and still lists what it knows.
func TestDeepseekModelsTool(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	out := callModels(t, goSDKClient(t, b.URL()))
	if !out.APIReached || out.Default != "deepseek-flash" {
		t.Fatalf("models = %+v", out)
	}
	byID := map[string]tools.ModelEntry{}
	for _, m := range out.Models {
		byID[m.ID] = m
	}
	for _, id := range d.ModelIDs() {
		if _, ok := byID[id]; !ok {
			t.Errorf("%s, which the double serves, is not listed", id)
		}
	}
	pro := byID["deepseek-v4-pro"]
	if pro.Price == nil || *pro.Price != deepseek.ProPrice || !pro.Known || pro.Served == nil || !*pro.Served || pro.ContextWindow != 1_000_000 || !pro.Thinking {
		t.Errorf("deepseek-v4-pro = %+v", pro)
	}
	if f := byID["deepseek-flash"]; !f.Default || f.Price == nil || *f.Price != deepseek.FlashPrice {
		t.Errorf("deepseek-flash = %+v", f)
	}
	if c := byID["deepseek-chat"]; c.Known || c.Price != nil {
		t.Errorf("deepseek-chat, served but not in the price table, = %+v", c)
	}

	down := startBridge(t, map[string]string{"DEEPSEEK_BASE_URL": "http://127.0.0.1:1", "DEEPSEEK_API_KEY": d.Key()})
	out = callModels(t, goSDKClient(t, down.URL()))
	ids := []string{}
	for _, m := range out.Models {
		ids = append(ids, m.ID)
	}
	if out.APIReached || !strings.Contains(out.APIError, "could not reach DeepSeek") || !slices.Equal(ids, []string{"deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro"}) {
		t.Errorf("with the API down: %+v", out)
	}
}

func callModels(t *testing.T, cs *mcp.ClientSession) tools.ModelsOutput {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deepseek_models", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("deepseek_models: %v %+v", err, res)
	}
	var out tools.ModelsOutput
	structured(t, res, &out)
	return out
}

package deepseek_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

func TestParseModels(t *testing.T) {
	ms, err := deepseek.ParseModels("")
	if err != nil || len(ms) != 3 || ms[2].ID != "deepseek-v4-pro" || ms[2].Price != deepseek.ProPrice {
		t.Fatalf("built-in list = %+v, %v", ms, err)
	}
	ms, err = deepseek.ParseModels("deepseek-v4-pro, my-model=0.01/0.2/0.4")
	if err != nil || len(ms) != 2 || ms[1].Price != (deepseek.Price{CacheHitInput: 0.01, CacheMissInput: 0.2, Output: 0.4}) || ms[0].Price != deepseek.ProPrice {
		t.Fatalf("ParseModels = %+v, %v", ms, err)
	}
	for spec, want := range map[string]string{
		"my-model":                      "give its prices per million tokens: my-model=CACHE_HIT/CACHE_MISS/OUTPUT",
		"x=1/2":                         "must be CACHE_HIT/CACHE_MISS/OUTPUT",
		"x=1/-2/3":                      "is not a non-negative number",
		"deepseek-flash,deepseek-flash": "listed twice",
		" , ":                           "lists no model",
	} {
		if _, err := deepseek.ParseModels(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseModels(%q) = %v, want %q", spec, err, want)
		}
	}
}

func TestCatalogResolve(t *testing.T) {
	c, err := deepseek.NewCatalog(deepseek.BuiltinModels, "deepseek-flash")
	if err != nil {
		t.Fatal(err)
	}
	m, th, err := c.Resolve("", "")
	if err != nil || m.ID != "deepseek-flash" || th != "high" {
		t.Errorf("defaults = %s %s %v", m.ID, th, err)
	}
	if m, th, err := c.Resolve("deepseek-v4-pro", "off"); err != nil || m.Price != deepseek.ProPrice || th != "off" {
		t.Errorf("pro off = %+v %s %v", m, th, err)
	}
	_, _, err = c.Resolve("gpt-5", "")
	if err == nil || !strings.Contains(err.Error(), `unknown model "gpt-5"; known models: deepseek-flash, deepseek-v4-flash, deepseek-v4-pro`) {
		t.Errorf("unknown model: %v", err)
	}
	if _, _, err := c.Resolve("", "medium-ish"); err == nil || !strings.Contains(err.Error(), "thinking must be one of off, low, high, max") {
		t.Errorf("bad thinking: %v", err)
	}
	if _, err := deepseek.NewCatalog(deepseek.BuiltinModels, "deepseek-chat"); err == nil || !strings.Contains(err.Error(), "DEEPSEEK_MODEL=deepseek-chat is not among the known models") {
		t.Errorf("a default outside the list: %v", err)
	}
}

// The thinking level reaches DeepSeek as its thinking-mode guide says: off
// is thinking.type disabled, an effort is thinking enabled plus
// reasoning_effort, and nothing is sent by default. The double refuses
// anything else, so what it accepted is what DeepSeek accepts.
func TestFlashThinkingOnTheWire(t *testing.T) {
	for _, c := range []struct {
		level, thinking, effort, thinksAt string
	}{
		{"", "", "", "high"},
		{"off", "disabled", "", "off"},
		{"low", "enabled", "low", "low"},
		{"max", "enabled", "max", "max"},
	} {
		srv, cl := newPair(t, nil)
		srv.Script(deepseektest.Reasoned("hmm", "answer"))
		res, err := cl.Flash(context.Background(), deepseek.FlashRequest{Task: "t", Model: "deepseek-v4-pro", Thinking: c.level})
		if err != nil {
			t.Fatalf("%q: %v", c.level, err)
		}
		r := srv.Requests()[0]
		if r.Model() != "deepseek-v4-pro" || r.Thinking() != c.thinking || r.Effort() != c.effort || r.ThinksAt() != c.thinksAt {
			t.Errorf("%q: sent model %s thinking %q effort %q (thinks at %s)", c.level, r.Model(), r.Thinking(), r.Effort(), r.ThinksAt())
		}
		want := c.level
		if want == "" {
			want = "high"
		}
		if res.Model != "deepseek-v4-pro" || res.Thinking != want {
			t.Errorf("%q: result model %s thinking %s", c.level, res.Model, res.Thinking)
		}
		if c.level == "off" && res.Usage.ReasoningTokens != 0 {
			t.Errorf("thinking off still reasoned: %+v", res.Usage)
		}
	}
}

func TestListModels(t *testing.T) {
	srv, cl := newPair(t, nil)
	ids, err := cl.ListModels(context.Background())
	if err != nil || strings.Join(ids, ",") != strings.Join(srv.ModelIDs(), ",") {
		t.Fatalf("ListModels = %v, %v", ids, err)
	}
	bad := deepseek.NewClient(deepseek.Options{BaseURL: srv.URL(), APIKey: "wrong"})
	if _, err := bad.ListModels(context.Background()); !errors.Is(err, deepseek.ErrKeyRejected) {
		t.Errorf("wrong key: %v", err)
	}
}

// An .env that names a legacy model keeps working without DEEPSEEK_MODELS;
// with DEEPSEEK_MODELS the default must be listed.
func TestCatalogFor(t *testing.T) {
	c, err := deepseek.CatalogFor("", "deepseek-chat")
	if err != nil || c.Default != "deepseek-chat" || len(c.Models) != 4 || c.PriceOf("deepseek-chat") != deepseek.FlashPrice {
		t.Errorf("legacy default = %+v, %v", c, err)
	}
	if _, err := deepseek.CatalogFor("deepseek-v4-pro", "deepseek-flash"); err == nil || !strings.Contains(err.Error(), "DEEPSEEK_MODEL=deepseek-flash is not among the known models (deepseek-v4-pro)") {
		t.Errorf("a default DEEPSEEK_MODELS leaves out: %v", err)
	}
	if c, err := deepseek.CatalogFor("", ""); err != nil || c.Default != deepseek.DefaultModel || len(c.Models) != 3 {
		t.Errorf("no config = %+v, %v", c, err)
	}
}

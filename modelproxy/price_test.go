package modelproxy

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// modelTurn answers with usage u, naming model in the answer ("" names none),
// streamed or whole.
func modelTurn(model string, u usageBlock, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		msg := map[string]any{"id": "msg_test", "type": "message", "role": "assistant",
			"content": []any{}, "stop_reason": "end_turn", "usage": u.json()}
		if model != "" {
			msg["model"] = model
		}
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(msg)
			return
		}
		sseHeaders(w)
		writeEvent(w, sseEvent{"message_start", map[string]any{"type": "message_start", "message": msg}})
		writeEvent(w, sseEvent{"message_stop", map[string]any{"type": "message_stop"}})
	}
}

// Each answer is priced at its own model, whatever DEEPSEEK_MODEL says: a pro
// request through a flash-configured proxy costs pro (×3), not flash.
func TestPricedAtTheAnswersModel(t *testing.T) {
	u := usageBlock{Input: 1_000_000, Output: 100_000, CacheRead: 500_000}
	cost := func(p deepseek.Price) float64 { return p.Cost(u.CacheRead, u.Input, u.Output) }
	req := func(model string) string {
		return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	}
	cases := []struct {
		name            string
		configured      string
		request, answer string
		stream          bool
		want            float64
	}{
		{"pro named in message_start, flash configured", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4-pro", true, cost(deepseek.ProPrice)},
		{"pro named in the whole answer, flash configured", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4-pro", false, cost(deepseek.ProPrice)},
		{"answer names no model: the request's", "deepseek-v4-flash", "deepseek-v4-pro", "", true, cost(deepseek.ProPrice)},
		{"the answer's model wins over the request's", "deepseek-v4-pro", "claude-haiku-4-5", "deepseek-v4-flash", true, cost(deepseek.FlashPrice)},
		{"neither names one: the configured", "deepseek-v4-flash", "", "", false, cost(deepseek.FlashPrice)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, modelTurn(c.answer, u, c.stream))
			p := startProxy(t, up, Options{Model: c.configured})
			token := open(t, p, "job-1")
			body := req(c.request)
			if c.request == "" {
				body = `{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
			}
			if a := call(t, p, "/v1/messages", "bearer", token, body); a.status != http.StatusOK {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			got, err := p.Close("job-1")
			if err != nil || math.Abs(got.CostUSD-c.want) > 1e-9 {
				t.Fatalf("job cost $%v (%v), want $%v", got.CostUSD, err, c.want)
			}
			if d := p.DailyUsage(); math.Abs(d.CostUSD-c.want) > 1e-9 {
				t.Fatalf("daily cost $%v, want $%v", d.CostUSD, c.want)
			}
		})
	}
}

// With a catalog of the owner's (DEEPSEEK_MODELS), an answer is priced by
// it, not by the built-in guess from the model's name.
func TestPricedByTheOwnersCatalog(t *testing.T) {
	u := usageBlock{Input: 1_000_000, Output: 100_000, CacheRead: 500_000}
	own := deepseek.Price{CacheHitInput: 0.01, CacheMissInput: 1, Output: 2}
	catalog := func(model string) deepseek.Price {
		if model == "my-gateway-model" {
			return own
		}
		return deepseek.PriceFor(model)
	}
	up := newUpstream(t, modelTurn("my-gateway-model", u, true))
	p := startProxy(t, up, Options{Model: "deepseek-v4-flash", Price: catalog})
	token := open(t, p, "job-1")
	if a := call(t, p, "/v1/messages", "bearer", token, `{"model":"my-gateway-model","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`); a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	got, err := p.Close("job-1")
	if want := own.Cost(u.CacheRead, u.Input, u.Output); err != nil || math.Abs(got.CostUSD-want) > 1e-9 {
		t.Fatalf("job cost $%v (%v), want $%v at the catalog's price (PriceFor's guess: $%v)",
			got.CostUSD, err, want, deepseek.PriceFor("my-gateway-model").Cost(u.CacheRead, u.Input, u.Output))
	}
}

package deepseek

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ModelInfo is what the bridge knows of one model: its limits, whether it
// thinks, and its price.
type ModelInfo struct {
	ID            string `json:"id"`
	ContextWindow int    `json:"context_window"`
	OutputCap     int    `json:"output_cap"`
	Thinking      bool   `json:"thinking"`
	Price         Price  `json:"price_per_million_tokens_usd"`
}

// Limits of DeepSeek's V4 models (REFERENCE: context 1M, output up to 384K).
const (
	v4Context   = 1_000_000
	v4OutputCap = 384_000
)

// BuiltinModels are the models the bridge knows without DEEPSEEK_MODELS.
var BuiltinModels = []ModelInfo{
	{ID: "deepseek-flash", ContextWindow: v4Context, OutputCap: v4OutputCap, Thinking: true, Price: FlashPrice},
	{ID: "deepseek-v4-flash", ContextWindow: v4Context, OutputCap: v4OutputCap, Thinking: true, Price: FlashPrice},
	{ID: "deepseek-v4-pro", ContextWindow: v4Context, OutputCap: v4OutputCap, Thinking: true, Price: ProPrice},
}

// Thinking levels a call may ask for. Off turns DeepSeek's thinking mode off
// ({"thinking":{"type":"disabled"}}); the others are its efforts
// (reasoning_effort on the OpenAI side, output_config.effort on the
// Anthropic side). DeepSeek thinks at high when nothing is sent.
const (
	ThinkingOff     = "off"
	ThinkingLow     = "low"
	ThinkingHigh    = "high"
	ThinkingMax     = "max"
	DefaultThinking = ThinkingHigh
)

// ThinkingLevels are the values of a call's thinking argument.
var ThinkingLevels = []string{ThinkingOff, ThinkingLow, ThinkingHigh, ThinkingMax}

// ParseModels reads DEEPSEEK_MODELS: comma-separated model ids, each with
// its prices per million tokens as id=CACHE_HIT/CACHE_MISS/OUTPUT (USD). A
// built-in id may leave its prices out. Empty means the built-in list.
func ParseModels(spec string) ([]ModelInfo, error) {
	if strings.TrimSpace(spec) == "" {
		return slices.Clone(BuiltinModels), nil
	}
	var out []ModelInfo
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, prices, priced := strings.Cut(item, "=")
		id = strings.TrimSpace(id)
		m := ModelInfo{ID: id, ContextWindow: v4Context, OutputCap: v4OutputCap, Thinking: true}
		if b, ok := builtin(id); ok {
			m = b
		} else if !priced {
			return nil, fmt.Errorf("DEEPSEEK_MODELS: %q is not a built-in model, so give its prices per million tokens: %s=CACHE_HIT/CACHE_MISS/OUTPUT (USD), e.g. %s=0.0028/0.14/0.28", id, id, id)
		}
		if id == "" || strings.ContainsAny(id, " \t/") {
			return nil, fmt.Errorf("DEEPSEEK_MODELS: %q is not a model id", item)
		}
		if priced {
			p, err := parsePrice(prices)
			if err != nil {
				return nil, fmt.Errorf("DEEPSEEK_MODELS: %s: %w", id, err)
			}
			m.Price = p
		}
		if slices.ContainsFunc(out, func(o ModelInfo) bool { return o.ID == id }) {
			return nil, fmt.Errorf("DEEPSEEK_MODELS: %s is listed twice", id)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("DEEPSEEK_MODELS lists no model: leave it empty for the built-in list")
	}
	return out, nil
}

func parsePrice(s string) (Price, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Price{}, fmt.Errorf("prices %q must be CACHE_HIT/CACHE_MISS/OUTPUT in USD per million tokens", s)
	}
	var v [3]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 {
			return Price{}, fmt.Errorf("price %q is not a non-negative number (USD per million tokens)", p)
		}
		v[i] = f
	}
	return Price{CacheHitInput: v[0], CacheMissInput: v[1], Output: v[2]}, nil
}

func builtin(id string) (ModelInfo, bool) {
	i := slices.IndexFunc(BuiltinModels, func(m ModelInfo) bool { return m.ID == id })
	if i < 0 {
		return ModelInfo{}, false
	}
	return BuiltinModels[i], true
}

// Catalog is the list of models calls may name, and the default.
type Catalog struct {
	Models  []ModelInfo
	Default string
}

// NewCatalog checks that def (DEEPSEEK_MODEL) is in models.
func NewCatalog(models []ModelInfo, def string) (Catalog, error) {
	c := Catalog{Models: models, Default: def}
	if _, ok := c.Lookup(def); !ok {
		return Catalog{}, fmt.Errorf("DEEPSEEK_MODEL=%s is not among the known models (%s): add it to DEEPSEEK_MODELS with its prices", def, strings.Join(c.IDs(), ", "))
	}
	return c, nil
}

// CatalogFor is the catalog of DEEPSEEK_MODELS (spec) with def
// (DEEPSEEK_MODEL) as its default. Without DEEPSEEK_MODELS, a default the
// built-in list does not name (a legacy alias such as deepseek-chat) is added
// to it, priced by PriceFor, so an existing .env keeps working; with
// DEEPSEEK_MODELS the default must be among them.
func CatalogFor(spec, def string) (Catalog, error) {
	if def == "" {
		def = DefaultModel
	}
	models, err := ParseModels(spec)
	if err != nil {
		return Catalog{}, err
	}
	if strings.TrimSpace(spec) == "" {
		if _, ok := builtin(def); !ok {
			models = append(models, ModelInfo{ID: def, ContextWindow: v4Context, OutputCap: v4OutputCap, Thinking: true, Price: PriceFor(def)})
		}
	}
	return NewCatalog(models, def)
}

// Lookup finds a model by id.
func (c Catalog) Lookup(id string) (ModelInfo, bool) {
	i := slices.IndexFunc(c.Models, func(m ModelInfo) bool { return m.ID == id })
	if i < 0 {
		return ModelInfo{}, false
	}
	return c.Models[i], true
}

// IDs are the known model ids, in the catalog's order.
func (c Catalog) IDs() []string {
	ids := make([]string, len(c.Models))
	for i, m := range c.Models {
		ids[i] = m.ID
	}
	return ids
}

// Resolve checks a call's model and thinking level: "" means the default
// model and DeepSeek's default thinking. The error lists what is known.
func (c Catalog) Resolve(model, thinking string) (ModelInfo, string, error) {
	if model == "" {
		model = c.Default
	}
	m, ok := c.Lookup(model)
	if !ok {
		return ModelInfo{}, "", fmt.Errorf("unknown model %q; known models: %s (see deepseek_models)", model, strings.Join(c.IDs(), ", "))
	}
	switch {
	case thinking == "":
		thinking = DefaultThinking
		if !m.Thinking {
			thinking = ThinkingOff
		}
	case !slices.Contains(ThinkingLevels, thinking):
		return ModelInfo{}, "", fmt.Errorf("thinking must be one of %s, not %q", strings.Join(ThinkingLevels, ", "), thinking)
	case thinking != ThinkingOff && !m.Thinking:
		return ModelInfo{}, "", fmt.Errorf("model %s does not think: leave thinking out or set it to off", model)
	}
	return m, thinking, nil
}

// PriceOf is the catalog's price of a model, else PriceFor's.
func (c Catalog) PriceOf(model string) Price {
	if m, ok := c.Lookup(model); ok {
		return m.Price
	}
	return PriceFor(model)
}

// ListModels calls GET {base}/models and returns the ids DeepSeek serves.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	if c.o.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.o.BaseURL+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: bad DEEPSEEK_BASE_URL %q: %v", ErrBadRequest, withoutUserinfo(c.o.BaseURL), unwrapURLError(err))
	}
	req.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: could not reach DeepSeek at %s: %v", ErrUpstream, withoutUserinfo(c.o.BaseURL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readAPIError(resp)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, maxErrorBody)).Decode(&list); err != nil {
		return nil, fmt.Errorf("%w: GET /models answered something that is not a model list: %v", ErrUpstream, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// ModelLister is what deepseek_models needs from the DeepSeek client: the
// ids GET /models serves.
type ModelLister interface {
	ListModels(ctx context.Context) ([]string, error)
}

var _ ModelLister = (*deepseek.Client)(nil)

// listModelsTimeout bounds the GET /models call of deepseek_models.
const listModelsTimeout = 10 * time.Second

// ModelsOutput is the structuredContent of deepseek_models.
type ModelsOutput struct {
	Models  []ModelEntry `json:"models" jsonschema:"every model the bridge knows or DeepSeek serves"`
	Default string       `json:"default" jsonschema:"the model used when a call names none (DEEPSEEK_MODEL)"`
	// APIReached is false when GET /models could not be read; APIError says why.
	APIReached bool   `json:"api_reached" jsonschema:"whether DeepSeek's GET /models answered"`
	APIError   string `json:"api_error,omitempty" jsonschema:"why DeepSeek's model list could not be read; the list then holds what the bridge knows"`
}

// ModelEntry is one model of deepseek_models.
type ModelEntry struct {
	ID            string          `json:"id" jsonschema:"the model id to pass as model"`
	Default       bool            `json:"default" jsonschema:"true for the model used when a call names none"`
	Known         bool            `json:"known" jsonschema:"the bridge knows its prices and limits, so calls may name it"`
	Served        *bool           `json:"served,omitempty" jsonschema:"DeepSeek's GET /models lists it (absent when the API could not be reached)"`
	ContextWindow int             `json:"context_window,omitempty" jsonschema:"input tokens it reads at most"`
	OutputCap     int             `json:"output_cap,omitempty" jsonschema:"output tokens it writes at most, reasoning included"`
	Thinking      bool            `json:"thinking" jsonschema:"it supports thinking (the thinking argument)"`
	Price         *deepseek.Price `json:"price_per_million_tokens_usd,omitempty" jsonschema:"USD per million tokens: cache-hit input, cache-miss input, output"`
}

// ModelsTool is deepseek_models: the bridge's model table merged with what
// DeepSeek's GET /models serves.
func ModelsTool(l ModelLister, cat deepseek.Catalog) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	tool := mcp.NewTool("deepseek_models",
		mcp.WithDescription("List the DeepSeek models calls may name (the model argument of deepseek_flash and deepseek_agent_start): "+
			"id, context window, output cap, thinking support, prices per million tokens, and which is the default. "+
			"Says so when DeepSeek's own list cannot be reached."),
		mcp.WithTitleAnnotation("List DeepSeek models"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(true),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithOutputSchema[ModelsOutput](),
	)
	handler := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		lctx, cancel := context.WithTimeout(ctx, listModelsTimeout)
		defer cancel()
		served, err := l.ListModels(lctx)
		out := mergeModels(cat, served, err)
		return mcp.NewToolResultStructured(out, modelsText(out)), nil
	}
	return tool, handler
}

// mergeModels lists the catalog's models, then those DeepSeek serves that
// the catalog does not know (without prices, so calls cannot name them).
func mergeModels(cat deepseek.Catalog, served []string, err error) ModelsOutput {
	out := ModelsOutput{Default: cat.Default, APIReached: err == nil}
	if err != nil {
		out.APIError = err.Error()
	}
	for _, m := range cat.Models {
		p := m.Price
		e := ModelEntry{ID: m.ID, Default: m.ID == cat.Default, Known: true, ContextWindow: m.ContextWindow,
			OutputCap: m.OutputCap, Thinking: m.Thinking, Price: &p}
		if err == nil {
			s := slices.Contains(served, m.ID)
			e.Served = &s
		}
		out.Models = append(out.Models, e)
	}
	if err == nil {
		for _, id := range served {
			if _, known := cat.Lookup(id); !known {
				yes := true
				out.Models = append(out.Models, ModelEntry{ID: id, Served: &yes})
			}
		}
	}
	return out
}

func modelsText(o ModelsOutput) string {
	var b strings.Builder
	if !o.APIReached {
		fmt.Fprintf(&b, "DeepSeek's model list could not be read (%s); these are the models the bridge knows.\n", o.APIError)
	}
	for _, m := range o.Models {
		fmt.Fprintf(&b, "- %s", m.ID)
		if m.Default {
			b.WriteString(" (default)")
		}
		if m.Price != nil {
			fmt.Fprintf(&b, ": context %d, output up to %d, thinking %v, $%g / $%g / $%g per 1M tokens (cache hit / miss / output)",
				m.ContextWindow, m.OutputCap, m.Thinking, m.Price.CacheHitInput, m.Price.CacheMissInput, m.Price.Output)
		} else {
			b.WriteString(": served by DeepSeek, but the bridge has no price for it (add it to DEEPSEEK_MODELS to use it)")
		}
		if m.Served != nil && !*m.Served {
			b.WriteString(" [not in DeepSeek's list]")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

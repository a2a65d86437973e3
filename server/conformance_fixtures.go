//go:build conformance

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The fixture tools the MCP conformance suite (@modelcontextprotocol/conformance
// 0.1.16, `server` scenarios) calls by name. They are compiled only with
// -tags conformance, and served through the same router, limits and tool
// middleware as the real tools.

// 1x1 red PNG and a 44-byte silent WAV header, base64.
const (
	fixturePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	fixtureWAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
)

func conformanceServerOptions() []mcpserver.ServerOption {
	return []mcpserver.ServerOption{mcpserver.WithLogging()}
}

func fixture(name, desc string, h mcpserver.ToolHandlerFunc, opts ...mcp.ToolOption) mcpserver.ServerTool {
	opts = append([]mcp.ToolOption{
		mcp.WithDescription(desc),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	}, opts...)
	return mcpserver.ServerTool{Tool: mcp.NewTool(name, opts...), Handler: h}
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func conformanceTools() []mcpserver.ServerTool {
	text := func(s string) mcpserver.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(s), nil
		}
	}
	contents := func(c ...mcp.Content) mcpserver.ToolHandlerFunc {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: c}, nil
		}
	}
	return []mcpserver.ServerTool{
		fixture("test_simple_text", "returns simple text", text("This is a simple text response for testing.")),
		fixture("test_image_content", "returns an image", contents(mcp.NewImageContent(fixturePNG, "image/png"))),
		fixture("test_audio_content", "returns audio", contents(mcp.NewAudioContent(fixtureWAV, "audio/wav"))),
		fixture("test_embedded_resource", "returns an embedded resource", contents(mcp.NewEmbeddedResource(mcp.TextResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}))),
		fixture("test_multiple_content_types", "returns text, image and resource", contents(
			mcp.NewTextContent("Multiple content types test:"),
			mcp.NewImageContent(fixturePNG, "image/png"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}),
		)),
		fixture("test_error_handling", "always fails", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("This tool intentionally returns an error for testing"), nil
		}),
		fixture("test_tool_with_logging", "sends three log messages", func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := mcpserver.ServerFromContext(ctx)
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				if err := srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "logger": "conformance", "data": msg}); err != nil {
					return nil, fmt.Errorf("log notification: %w", err)
				}
			}
			return mcp.NewToolResultText("Tool with logging executed successfully"), nil
		}),
		fixture("test_tool_with_progress", "reports progress 0, 50, 100 of 100", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p := newProgressReporter(ctx, req)
			for i, v := range []float64{0, 50, 100} {
				if i > 0 {
					if err := pause(ctx, 50*time.Millisecond); err != nil {
						return nil, err
					}
				}
				p.Report(v, 100, fmt.Sprintf("step %d of 3", i+1))
			}
			return mcp.NewToolResultText("Tool with progress executed successfully"), nil
		}),
		fixture("test_sampling", "asks the client's model", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			prompt := req.GetString("prompt", "")
			res, err := mcpserver.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
				MaxTokens: 100,
			}})
			if err != nil {
				return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			txt := ""
			if tc, ok := res.Content.(mcp.TextContent); ok {
				txt = tc.Text
			}
			return mcp.NewToolResultText("LLM response: " + txt), nil
		}, mcp.WithString("prompt", mcp.Required())),
		fixture("test_elicitation", "asks the user", elicit(func(req mcp.CallToolRequest) (string, any) {
			return req.GetString("message", ""), map[string]any{
				"type": "object",
				"properties": map[string]any{
					"username": map[string]any{"type": "string", "description": "User's response"},
					"email":    map[string]any{"type": "string", "description": "User's email address"},
				},
				"required": []string{"username", "email"},
			}
		}), mcp.WithString("message", mcp.Required())),
		fixture("test_elicitation_sep1034_defaults", "asks with defaults", elicit(func(mcp.CallToolRequest) (string, any) {
			return "Please review and update the form fields with defaults", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
			}
		})),
		fixture("test_elicitation_sep1330_enums", "asks with every enum form", elicit(func(mcp.CallToolRequest) (string, any) {
			return "Please select options from the enum fields", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
					"titledSingle": map[string]any{"type": "string", "oneOf": []any{
						map[string]any{"const": "value1", "title": "First Option"},
						map[string]any{"const": "value2", "title": "Second Option"},
						map[string]any{"const": "value3", "title": "Third Option"},
					}},
					"legacyEnum":    map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
					"titledMulti": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
						map[string]any{"const": "value1", "title": "First Choice"},
						map[string]any{"const": "value2", "title": "Second Choice"},
						map[string]any{"const": "value3", "title": "Third Choice"},
					}}},
				},
			}
		})),
		{
			Tool: mcp.NewToolWithRawSchema("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
  "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
  "additionalProperties": false
}`)),
			Handler: text("ok"),
		},
	}
}

func elicit(build func(mcp.CallToolRequest) (string, any)) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg, schema := build(req)
		res, err := mcpserver.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: msg, RequestedSchema: schema}})
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return mcp.NewToolResultText(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, b)), nil
	}
}

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
//
// test_sampling and the test_elicitation* tools are left out on purpose: they
// need a server-to-client request whose answer the client POSTs back under a
// session id, and the bridge is stateless (no session ids), so mcp-go cannot
// route the answer and the call would only time out after 60 s. Those
// scenarios fail fast with "tool not found" instead (expected failures).

// 1x1 red PNG and a 44-byte silent WAV header, base64.
const (
	fixturePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	fixtureWAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
)

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
		{
			Tool: mcp.NewToolWithRawSchema("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}, "additionalProperties": false}},
  "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
  "additionalProperties": false
}`)),
			Handler: text("ok"),
		},
	}
}

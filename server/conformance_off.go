//go:build !conformance

package server

import mcpserver "github.com/mark3labs/mcp-go/server"

// The fixture tools of the MCP conformance suite exist only in a build with
// -tags conformance (conformance_fixtures.go).
func conformanceTools() []mcpserver.ServerTool { return nil }

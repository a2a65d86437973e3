package tools

import "github.com/mark3labs/mcp-go/mcp"

// bindArgs decodes a call's arguments into the tool's argument struct (nil:
// they were read). mcp-go has checked them against the tool's input schema
// before the handler runs (server.New), so every field holds what its schema
// declares; decoding converts nothing, and a value it still cannot hold is
// an error result for the calling model.
func bindArgs(req mcp.CallToolRequest, v any) *mcp.CallToolResult {
	if err := req.BindArguments(v); err != nil {
		return mcp.NewToolResultError("the arguments could not be read: " + err.Error())
	}
	return nil
}

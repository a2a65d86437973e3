package server

import (
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// tools is the one list of what the bridge serves. Each entry comes from a
// constructor that returns the schema and handler together.
func (s *Server) tools() []mcpserver.ServerTool {
	cfg := s.o.Config
	tools := []mcpserver.ServerTool{
		serverTool(FlashTool(s.o.Flash)),
	}
	if s.o.Jobs != nil {
		ao := AgentToolOptions{SyncWindow: cfg.SyncWindow, MaxSteps: cfg.MaxSteps, JobTimeout: cfg.JobTimeout, OwnerToken: s.o.OwnerToken}
		tools = append(tools,
			serverTool(AgentStartTool(s.o.Jobs, ao)),
			serverTool(AgentPollTool(s.o.Jobs, ao)),
			serverTool(AgentCancelTool(s.o.Jobs, ao)),
		)
	}
	return append(tools, conformanceTools()...)
}

func serverTool(t mcp.Tool, h mcpserver.ToolHandlerFunc) mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: t, Handler: h}
}

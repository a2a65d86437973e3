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
		serverTool(FlashTool(s.o.Flash, s.o.Models)),
		serverTool(ModelsTool(s.o.Lister, s.o.Models)),
	}
	if s.o.Jobs != nil {
		ao := AgentToolOptions{SyncWindow: cfg.SyncWindow, MaxSteps: cfg.MaxSteps, JobTimeout: cfg.JobTimeout, Models: s.o.Models, OwnerToken: s.o.OwnerToken}
		tools = append(tools,
			serverTool(AgentStartTool(s.o.Jobs, ao)),
			serverTool(AgentPollTool(s.o.Jobs, ao)),
			serverTool(AgentCancelTool(s.o.Jobs, ao)),
		)
		if l, ok := s.o.Jobs.(AgentLister); ok {
			tools = append(tools, serverTool(AgentListTool(l)))
		}
	}
	return append(tools, conformanceTools()...)
}

func serverTool(t mcp.Tool, h mcpserver.ToolHandlerFunc) mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: t, Handler: h}
}

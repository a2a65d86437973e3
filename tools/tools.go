// Package tools is the bridge's MCP tools: one constructor per tool
// (deepseek_flash, deepseek_models, deepseek_agent_start, _poll, _cancel,
// _continue, _message, _list, deepseek_review) returning its schema and handler together, the
// agent job payload and its handoff, and the progress a blocking call
// reports. List is the one list of what the bridge serves; package server
// registers it and carries the calls (HTTP, the unix socket), checks the
// arguments against these schemas, and gives each call its progress Reporter.
package tools

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

// Options are what the tools are built from.
type Options struct {
	Flash FlashClient
	// Lister reads DeepSeek's model list for deepseek_models (nil: Flash,
	// when it can).
	Lister ModelLister
	// Models are the models calls may name (zero: the built-in list).
	Models deepseek.Catalog
	Jobs   AgentJobs // nil: the agent tools are not offered
	// Agent tunes the agent tools (its Models: the Models above).
	Agent AgentToolOptions
}

// List is the one list of what the bridge serves. Each entry comes from a
// constructor that returns the schema and handler together; an agent tool
// the registry cannot serve (it lacks the interface) is left out.
func List(o Options) []mcpserver.ServerTool {
	if o.Models.Models == nil {
		o.Models = builtinCatalog("")
	}
	if o.Lister == nil {
		if l, ok := o.Flash.(ModelLister); ok {
			o.Lister = l
		} else {
			o.Lister = noLister{}
		}
	}
	tools := []mcpserver.ServerTool{
		serverTool(FlashTool(o.Flash, o.Models)),
		serverTool(ModelsTool(o.Lister, o.Models)),
	}
	if o.Jobs == nil {
		return tools
	}
	ao := o.Agent
	ao.Models = o.Models
	tools = append(tools,
		serverTool(AgentStartTool(o.Jobs, ao)),
		serverTool(AgentPollTool(o.Jobs, ao)),
		serverTool(AgentCancelTool(o.Jobs, ao)),
		serverTool(ReviewTool(o.Jobs, ao)),
	)
	if c, ok := o.Jobs.(AgentContinuer); ok {
		tools = append(tools, serverTool(AgentContinueTool(o.Jobs, c, ao)))
	}
	if m, ok := o.Jobs.(AgentMessenger); ok {
		tools = append(tools, serverTool(AgentMessageTool(m, ao)))
	}
	if l, ok := o.Jobs.(AgentLister); ok {
		tools = append(tools, serverTool(AgentListTool(l)))
	}
	if f, ok := o.Jobs.(AgentFetcher); ok {
		tools = append(tools, serverTool(AgentFetchTool(f)))
	}
	return tools
}

func serverTool(t mcp.Tool, h mcpserver.ToolHandlerFunc) mcpserver.ServerTool {
	return compactOutput(mcpserver.ServerTool{Tool: t, Handler: h})
}

// Instructions tell the host's model which tool to reach for, of those
// offered.
func Instructions(offered []mcpserver.ServerTool) string {
	has := map[string]bool{}
	for _, t := range offered {
		has[t.Tool.Name] = true
	}
	var s []string
	if has["deepseek_flash"] {
		s = append(s, "deepseek_flash hands a self-contained task (plus pasted material) to DeepSeek and returns its answer with token usage and cost.")
	}
	if has["deepseek_agent_start"] {
		s = append(s, "For work that needs to read, run or change files in a workspace, deepseek_agent_start runs a DeepSeek agent job there"+
			" (commands may wait for a human's approval); follow it with deepseek_agent_poll until it finishes, or stop it with deepseek_agent_cancel;"+
			" deepseek_agent_continue picks up a job that ended (a ceiling, a cancel, a restart) with a new message; deepseek_agent_list shows the jobs any session started.")
	}
	if has["deepseek_review"] {
		s = append(s, "deepseek_review has DeepSeek review the uncommitted changes, a branch, a commit or files of a workspace, read-only, and returns a verdict with findings by file and line; poll a long one with deepseek_agent_poll.")
	}
	return strings.Join(s, " ")
}

// builtinCatalog is the built-in model list with def as its default
// (deepseek.CatalogFor without DEEPSEEK_MODELS, which cannot fail).
func builtinCatalog(def string) deepseek.Catalog {
	c, _ := deepseek.CatalogFor("", def)
	return c
}

// noLister is the lister of a flash client that cannot list models.
type noLister struct{}

func (noLister) ListModels(context.Context) ([]string, error) {
	return nil, errors.New("this bridge's DeepSeek client cannot list models")
}

package tools

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Unavailable is List's tools, every one answering every call with why as
// an error result: what `bridge stdio` serves while the bridge is not set up,
// so a host lists the tools and shows its user what to run, where a closed
// connection would show only "connection closed".
func Unavailable(why string) []mcpserver.ServerTool {
	ts := List(Options{Jobs: noJobs{}})
	for i := range ts {
		ts[i].Handler = func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(why), nil
		}
	}
	return ts
}

// noJobs offers every agent tool to List; Unavailable replaces each handler,
// so none of its methods is ever called.
type noJobs struct{}

var errNoJobs = errors.New("no agent jobs: the bridge is not set up")

func (noJobs) Start(context.Context, jobs.StartRequest) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errNoJobs
}
func (noJobs) Wait(context.Context, string, time.Duration, func(jobs.Snapshot)) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errNoJobs
}
func (noJobs) CancelBy(context.Context, string, jobs.StopReason) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errNoJobs
}
func (noJobs) Continue(context.Context, jobs.ContinueRequest) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errNoJobs
}
func (noJobs) Message(string, string, string) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errNoJobs
}
func (noJobs) List() []jobs.Snapshot               { return nil }
func (noJobs) Part(string, string) ([]byte, error) { return nil, errNoJobs }

var (
	_ AgentContinuer = noJobs{}
	_ AgentMessenger = noJobs{}
	_ AgentLister    = noJobs{}
	_ AgentFetcher   = noJobs{}
)

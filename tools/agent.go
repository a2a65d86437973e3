package tools

import (
	"context"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// AgentJobs is what the agent tools need from the job registry.
type AgentJobs interface {
	Start(ctx context.Context, req jobs.StartRequest) (jobs.Snapshot, error)
	Wait(ctx context.Context, id string, d time.Duration, onChange func(jobs.Snapshot)) (jobs.Snapshot, error)
	CancelBy(ctx context.Context, id string, by jobs.StopReason) (jobs.Snapshot, error)
}

var _ AgentJobs = (*jobs.Registry)(nil)

// Limits of the agent tools.
const (
	DefaultPollWait = 20 * time.Second
	MaxPollWait     = 40 * time.Second
	cancelWait      = 15 * time.Second // how long cancel waits for the harness to be gone
	progressEvery   = time.Second      // at most one progress notification per interval
)

// AgentToolOptions tune the agent tools.
type AgentToolOptions struct {
	SyncWindow      time.Duration // BRIDGE_SYNC_WINDOW_MS: how long start waits for an inline result
	MaxSteps        int           // BRIDGE_MAX_STEPS, shown in the schema
	JobTimeout      time.Duration // BRIDGE_JOB_TIMEOUT_MS, shown in the schema
	Now             func() time.Time
	ProgressLimiter time.Duration    // 0 = progressEvery
	Models          deepseek.Catalog // the models a job may name (zero: the built-in list)
	// OwnerToken: a cancel whose _meta carries it under OwnerMetaKey is the
	// owner's (bridgectl job kill); "" = every cancel is the caller's.
	OwnerToken string
	// Host, when set, lets a call marked WithHostAsk ask its host's user to
	// decide a job's pending request (in-host approvals).
	Host HostApprovals
	// ResultBudget is the bytes an agent tool's result may weigh
	// (BRIDGE_RESULT_BUDGET; 0: the host's, budget).
	ResultBudget int
}

func (o AgentToolOptions) withDefaults() AgentToolOptions {
	if o.SyncWindow <= 0 {
		o.SyncWindow = config.DefaultSyncWindow
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = config.DefaultMaxSteps
	}
	if o.Models.Models == nil {
		o.Models = builtinCatalog("")
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = config.DefaultJobTimeout
	}
	if o.ProgressLimiter <= 0 {
		o.ProgressLimiter = progressEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o AgentToolOptions) now() time.Time { return o.Now() }

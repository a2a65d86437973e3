package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/guard"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/modelproxy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// modelProxyAddr is where the model proxy listens: its own loopback port,
// never the public router, so no capability URL reaches it.
const modelProxyAddr = "127.0.0.1:0"

// modelProxyShutdown bounds stopping the model proxy once every job is closed.
const modelProxyShutdown = 5 * time.Second

// errNoKeyForJobs refuses agent jobs when there is no DeepSeek key: the model
// proxy cannot run without it, and a job is never handed a key itself.
var errNoKeyForJobs = errors.New("agent jobs need DEEPSEEK_API_KEY: the bridge's model proxy holds it and gives each job a revocable token instead; set it and restart the bridge")

// proxyGateway is jobs.ModelGateway over the model proxy: each job gets the
// proxy's URL and its own token, and its usage comes back on Close.
type proxyGateway struct{ p *modelproxy.Proxy }

var _ jobs.ModelGateway = proxyGateway{}

// Open issues the job's token.
func (g proxyGateway) Open(jobID string) (baseURL, token string, err error) {
	return g.p.Open(jobID)
}

// DisableThinking turns DeepSeek's thinking off for the job's calls.
func (g proxyGateway) DisableThinking(jobID string) { g.p.DisableThinking(jobID) }

// Revoke kills the job's token at once (the job is being stopped).
func (g proxyGateway) Revoke(jobID string) { g.p.Revoke(jobID) }

// Close revokes the job's token and returns what its model calls used.
func (g proxyGateway) Close(jobID string) (jobs.Metered, error) {
	u, err := g.p.Close(jobID)
	return jobsUsage(u), err
}

// jobsUsage converts the proxy's count (same field meanings: input is
// cache-miss input, thinking is inside output) and keeps its cost, which
// priced every answer at the model that gave it; requests and retries stay
// in the proxy's log.
func jobsUsage(u modelproxy.Usage) jobs.Metered {
	return jobs.Metered{Usage: jobs.Usage{
		InputTokens:     u.InputTokens,
		OutputTokens:    u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens,
		ThinkingTokens:  u.ThinkingTokens,
	}, CostUSD: u.CostUSD, UpstreamError: u.LastUpstreamError}
}

// startModelProxy builds the model proxy from cfg and serves it on loopback
// until stopModelProxy. onFault ends a job the proxy cannot serve any more
// (budget exceeded, key rejected, balance gone). Without a key it returns
// modelproxy.ErrNoAPIKey.
func startModelProxy(cfg config.Config, models deepseek.Catalog, dir statedir.Dir, log *zerolog.Logger, onFault func(jobID string, f modelproxy.Fault)) (*modelproxy.Proxy, error) {
	mp, err := modelproxy.New(modelproxy.Options{
		Upstream:        cfg.AnthropicBaseURL,
		APIKey:          cfg.APIKey,
		Model:           cfg.Model,
		Price:           models.PriceOf,
		JobMaxCostUSD:   cfg.JobMaxCostUSD,
		JobMaxTokens:    cfg.JobMaxTokens,
		DailyMaxCostUSD: cfg.DailyMaxCostUSD,
		StateDir:        dir,
		Logger:          log,
		OnJobFault:      onFault,
	})
	if err != nil {
		return nil, err
	}
	// Not tied to the serve context: the proxy must outlive the registry's
	// shutdown, which still closes job tokens.
	if err := mp.Listen(context.Background(), modelProxyAddr); err != nil {
		return nil, fmt.Errorf("model proxy: %w", err)
	}
	return mp, nil
}

// stopModelProxy shuts the proxy down within modelProxyShutdown; call it
// after the registry closed its jobs. A nil proxy is fine.
func stopModelProxy(ctx context.Context, mp *modelproxy.Proxy, log zerolog.Logger) {
	if mp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, modelProxyShutdown)
	defer cancel()
	if err := mp.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("stopping the model proxy")
	}
}

// refusingGateway opens no model endpoint: the gateway of a daemon without a
// key (its Admit refuses every job first; this is the second lock).
type refusingGateway struct{ err error }

var _ jobs.ModelGateway = refusingGateway{}

func (g refusingGateway) Open(string) (string, string, error) { return "", "", g.err }
func (g refusingGateway) Revoke(string)                       {}
func (g refusingGateway) Close(string) (jobs.Metered, error)  { return jobs.Metered{}, nil }

// refusingGuard admits no workspace: the guard of a daemon without a key.
type refusingGuard struct{ *guard.Guard }

func (refusingGuard) Admit(string) (string, error) { return "", errNoKeyForJobs }

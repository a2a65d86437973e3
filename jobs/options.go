package jobs

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Options configure a Registry. Zero limits take the config defaults.
type Options struct {
	Dir     statedir.Dir
	Harness harness.Harness
	Gateway ModelGateway
	Model   string // DEEPSEEK_MODEL: the harness's model and the price of its usage
	// Price is a model's price (the daemon's catalog: built-in or
	// DEEPSEEK_MODELS); nil = deepseek.PriceFor.
	Price func(model string) deepseek.Price

	MaxConcurrent int           // BRIDGE_MAX_CONCURRENT (0 = config.DefaultMaxConcurrent)
	MaxQueue      int           // BRIDGE_MAX_QUEUE (0 = no queue: busy means refused)
	MaxSteps      int           // BRIDGE_MAX_STEPS (0 = config.DefaultMaxSteps)
	JobTimeout    time.Duration // BRIDGE_JOB_TIMEOUT_MS (0 = config.DefaultJobTimeout)
	ResultTTL     time.Duration // never shorter than JobTimeout
	TraceInterval time.Duration // snapshot writes while running, at most one per interval

	// Guard admits each workspace and prepares each harness spec.
	Guard Guard

	// Floor is the owner's policy floor (BRIDGE_POLICY_FLOOR_FILE), merged
	// over every job's policy; FloorFile names it ("" when there is none).
	// RequirePolicy refuses a start without a policy (BRIDGE_REQUIRE_POLICY).
	Floor         policy.Policy
	FloorFile     string
	RequirePolicy bool
	// WorkspaceLock refuses a job on a workspace a live job holds (or one
	// inside or around it): BRIDGE_WORKSPACE_LOCK.
	WorkspaceLock bool

	Logger *zerolog.Logger
}

package daemon

import (
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// Catalog is the models calls may name: DEEPSEEK_MODELS, or the built-in
// list, with DEEPSEEK_MODEL as the default (deepseek.CatalogFor).
func Catalog(cfg config.Config) (deepseek.Catalog, error) {
	return deepseek.CatalogFor(cfg.Models, cfg.Model)
}

// loadFloor reads the owner's job policy floor (BRIDGE_POLICY_FLOOR_FILE)
// at start; an invalid floor stops the daemon with the file, line and
// reason, so that no job runs under less than the owner wrote.
func loadFloor(cfg config.Config, log zerolog.Logger) (policy.Policy, error) {
	if cfg.PolicyFloorFile == "" {
		if cfg.RequirePolicy {
			log.Info().Msg("every agent job must carry a policy (BRIDGE_REQUIRE_POLICY); no policy floor (BRIDGE_POLICY_FLOOR_FILE)")
		}
		return policy.Policy{}, nil
	}
	floor, err := policy.LoadFloor(cfg.PolicyFloorFile)
	if err != nil {
		return policy.Policy{}, err
	}
	log.Info().Str("floor", cfg.PolicyFloorFile).Bool("require_policy", cfg.RequirePolicy).Msg("job policy floor loaded: every job's policy is narrowed by it")
	return floor, nil
}

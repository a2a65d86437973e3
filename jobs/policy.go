package jobs

import (
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// ThinkingSwitch is a ModelGateway that can turn the model's thinking off
// for one job's calls (the daemon's model proxy can).
type ThinkingSwitch interface {
	DisableThinking(jobID string)
}

// enforced merges the owner's floor over the caller's policy.
func (r *Registry) enforced(caller *Policy) (policy.Enforced, error) {
	if caller == nil && r.opts.RequirePolicy {
		return policy.Enforced{}, fmt.Errorf("%w: this bridge requires a policy for every job (BRIDGE_REQUIRE_POLICY): pass policy, e.g. {\"tools\":[\"Read\",\"Grep\",\"Glob\"]} for a read-only job", ErrBadInput)
	}
	var c policy.Policy
	if caller != nil {
		if err := caller.Validate(); err != nil {
			return policy.Enforced{}, fmt.Errorf("%w: policy: %v", ErrBadInput, err)
		}
		c = *caller
	}
	return policy.Merge(r.opts.Floor, c, r.opts.FloorFile), nil
}

// Policy is a caller's job policy (see package policy).
type Policy = policy.Policy

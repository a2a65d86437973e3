package guard

import (
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// ReviewScope computes a review's scope of the admitted workspace ws with
// the daemon's trusted git (changes.ComputeScope), and with project the
// workspace's own CLAUDE.md and AGENTS.md (jobs.Scoper).
func (g *Guard) ReviewScope(ws string, spec changes.ScopeSpec, left func(rel string) bool, project bool) (changes.Scope, string, error) {
	s, err := changes.ComputeScope(ws, spec, g.git, left)
	if err != nil || !project {
		return s, "", err
	}
	var names []string
	for _, n := range review.ProjectFiles {
		if !left(n) {
			names = append(names, n)
		}
	}
	instr, err := changes.ReadTop(ws, names, review.MaxProjectBytes)
	return s, instr, err
}

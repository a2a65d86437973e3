package jobs

import (
	"fmt"
	"path/filepath"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// ReviewRequest makes a StartRequest a review (deepseek_review): the job
// runs under review.Policy whatever the request's policy, and its task is
// the review's prompt over the scope the daemon computed.
type ReviewRequest struct {
	review.Request
	// IncludeProjectInstructions hands the reviewer the workspace's
	// CLAUDE.md and AGENTS.md.
	IncludeProjectInstructions bool
}

// Scoper is the side of a Guard that computes a review's scope with the
// daemon's trusted git: the scope of spec in ws, leaving out the paths left
// reports, and with project the workspace's own instructions (bounded).
type Scoper interface {
	ReviewScope(ws string, spec changes.ScopeSpec, left func(rel string) bool, project bool) (changes.Scope, string, error)
}

// ReviewState is what a review job keeps of its request: the scope its
// answer's findings are read against, and the focus it was given.
type ReviewState struct {
	Scope changes.Scope `json:"scope"`
	Focus string        `json:"focus,omitempty"`
}

// reviewTask computes req's scope in the admitted workspace ws and returns
// the review's state, the task the snapshot shows and the prompt the
// harness is given.
func (r *Registry) reviewTask(ws string, req *ReviewRequest, deny func(ws, p string) (string, bool)) (*ReviewState, string, string, error) {
	sc, ok := r.opts.Guard.(Scoper)
	if !ok {
		return nil, "", "", fmt.Errorf("%w: this bridge cannot compute a review's scope", ErrBadInput)
	}
	left := func(rel string) bool {
		_, denied := deny(ws, filepath.Join(ws, filepath.FromSlash(rel)))
		return denied
	}
	scope, project, err := sc.ReviewScope(ws, req.Scope, left, req.IncludeProjectInstructions)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if len(scope.Files) == 0 {
		return nil, "", "", fmt.Errorf("%w: scope %s holds no file to review (left out: %d secret or denied)", ErrBadInput, req.Scope, len(scope.LeftOut))
	}
	rq := req.Request
	rq.ProjectInstructions = project
	task := "Review " + req.Scope.String()
	if req.Focus != "" {
		task += " (focus: " + oneLine(req.Focus, 200) + ")"
	}
	return &ReviewState{Scope: scope, Focus: req.Focus}, task, review.Prompt(rq, scope), nil
}

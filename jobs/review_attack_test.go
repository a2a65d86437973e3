package jobs

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// scopeGuard is a rootGuard that computes a review's scope (Scoper) and
// counts how often it was asked to.
type scopeGuard struct {
	rootGuard
	asked *atomic.Int32
}

func (g scopeGuard) ReviewScope(string, changes.ScopeSpec, func(string) bool, bool) (changes.Scope, string, error) {
	g.asked.Add(1)
	return changes.Scope{Files: []changes.ScopeFile{{Path: "a.go", Lines: 1}}}, "", nil
}

// Attack review: a review computes its scope — the daemon's git, outside
// every sandbox — before the workspace lock is checked, so a review asked
// for while a job runs in the workspace runs git over the files that job is
// writing (no overlay: straight into the workspace), and only then is
// refused as busy.
func TestAttackReviewScopeRunsBeforeTheWorkspaceLock(t *testing.T) {
	var asked atomic.Int32
	e := newEnv(t, func(o *Options) {
		o.WorkspaceLock = true
		o.Guard = scopeGuard{rootGuard: o.Guard.(rootGuard), asked: &asked}
	})
	first := e.start("write things")
	run := e.nextRun()
	_, err := e.r.Start(t.Context(), StartRequest{Workspace: e.ws,
		Review: &ReviewRequest{Request: review.Request{Scope: changes.ScopeSpec{Kind: changes.ScopeUncommitted}}}})
	if !errors.Is(err, ErrWorkspaceBusy) {
		t.Fatalf("a review beside a running job: %v; want it refused as busy", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the review's scope was computed %d time(s) in a workspace a running job holds, before it was refused as busy", n)
	}
	e.succeed(run, first.ID)
}

package jobs

import (
	"errors"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// blockingScopeGuard is a rootGuard whose review scope says when it begins
// and ends only when the test lets it: the daemon's git at work.
type blockingScopeGuard struct {
	rootGuard
	computing chan<- struct{}
	release   <-chan struct{}
}

func (g blockingScopeGuard) ReviewScope(string, changes.ScopeSpec, func(string) bool, bool) (changes.Scope, string, error) {
	g.computing <- struct{}{}
	<-g.release
	return changes.Scope{Files: []changes.ScopeFile{{Path: "a.go", Lines: 1}}}, "", nil
}

// Second attack review: the review checks the workspace lock, then
// computes its scope with the registry unlocked and records nothing
// meanwhile. A deepseek_agent_start for the same workspace in that window
// finds no holder and starts: the daemon's git then runs, outside every
// sandbox, over a workspace a running job writes (no overlay: straight
// into it; it can plant a commondir or a linked objects dir after
// ownRepository's check). The review is refused as busy only at the end.
func TestAttackReviewScopeRacesAJobStartedWhileItComputes(t *testing.T) {
	computing, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, func(o *Options) {
		o.WorkspaceLock = true
		o.Guard = blockingScopeGuard{rootGuard: o.Guard.(rootGuard), computing: computing, release: release}
	})
	reviewErr := make(chan error, 1)
	go func() {
		_, err := e.r.Start(t.Context(), StartRequest{Workspace: e.ws,
			Review: &ReviewRequest{Request: review.Request{Scope: changes.ScopeSpec{Kind: changes.ScopeUncommitted}}}})
		reviewErr <- err
	}()
	<-computing // the scope is being computed
	writer, err := e.r.Start(t.Context(), StartRequest{Task: "write things", Workspace: e.ws})
	if err == nil {
		run := e.nextRun()
		close(release)
		<-reviewErr
		e.succeed(run, writer.ID)
		t.Fatalf("a job was started in the workspace (%s) while the daemon's git computed a review's scope there; want it refused as busy", writer.ID)
	}
	close(release)
	if !errors.Is(err, ErrWorkspaceBusy) {
		t.Errorf("a job started during a review's scope: %v; want ErrWorkspaceBusy", err)
	}
	if err := <-reviewErr; err != nil {
		t.Errorf("the review: %v", err)
	}
}

package jobs

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// revokingGateway records Revoke and Close, like the model proxy's token.
type revokingGateway struct {
	mu      sync.Mutex
	revoked []string
	closed  []string
}

var _ ModelGateway = (*revokingGateway)(nil)

func (g *revokingGateway) Open(id string) (string, string, error) {
	return "http://127.0.0.1:2", "per-job-token", nil
}

func (g *revokingGateway) Revoke(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked = append(g.revoked, id)
}

func (g *revokingGateway) Close(id string) (Metered, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = append(g.closed, id)
	return Metered{}, nil
}

func (g *revokingGateway) state() (revoked, closed []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.revoked), slices.Clone(g.closed)
}

// A stopped job's token is revoked the moment it is stopped, not once its
// (slow) harness has been reaped: when Cancel gives up waiting, the token is
// already dead though the gateway has not been closed yet.
func TestTokenRevokedWhenStoppedNotWhenReaped(t *testing.T) {
	stops := []struct {
		name string
		stop func(e *env, id string)
	}{
		{"cancel", func(e *env, id string) {
			ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Millisecond)
			defer cancel()
			if s, err := e.r.Cancel(ctx, id); err != nil || s.Status.Final() {
				e.t.Fatalf("Cancel = %s, %v; want the job still ending (its harness lingers)", s.Status, err)
			}
		}},
		{"abort (ceiling)", func(e *env, id string) { e.r.Abort(id, Stop{Reason: StopBudgetCeiling, Text: "budget exceeded: test"}) }},
		{"step ceiling", func(e *env, id string) {}}, // the run below sends MaxSteps+1 tool calls
	}
	for _, c := range stops {
		t.Run(c.name, func(t *testing.T) {
			g := &revokingGateway{}
			e := newEnv(t, func(o *Options) { o.Gateway = g; o.MaxSteps = 1 })
			e.h.linger = true
			s := e.start("x")
			run := e.nextRun()
			if c.name == "step ceiling" {
				run.send(evToolUse("a", "Read", "f"), evToolUse("b", "Read", "g"))
				<-run.stopped
			}
			c.stop(e, s.ID)
			revoked, closed := g.state()
			if !slices.Equal(revoked, []string{s.ID}) || len(closed) != 0 {
				t.Fatalf("while the harness lingers: revoked %v closed %v; want revoked [%s], not closed", revoked, closed, s.ID)
			}
			run.end(harness.Exit{Code: -1, Signal: "terminated", Stopped: true})
			if got := e.settle(s.ID); got.Status == StatusDone {
				t.Fatalf("status %s", got.Status)
			}
			if _, closed := g.state(); !slices.Equal(closed, []string{s.ID}) {
				t.Fatalf("closed %v after the harness ended", closed)
			}
		})
	}
}

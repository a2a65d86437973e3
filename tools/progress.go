package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Reporter sends the notifications/progress of one tools/call; it does
// nothing when the caller gave no progress token. The server puts the call's
// reporter in the handler's context (WithReporter): it owns the token, keeps
// the values strictly increasing, orders them with its keepalives and writes
// them to the call's stream.
type Reporter interface {
	// Report sends one notification; total 0 means unknown.
	Report(progress, total float64, message string)
	// Done sends the last one, with progress equal to total.
	Done(message string)
}

type reporterKey struct{}

// WithReporter returns ctx carrying the call's progress reporter.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// reporterFrom is the call's reporter; without one (a handler called outside
// the server, as in a unit test) progress goes nowhere.
func reporterFrom(ctx context.Context) Reporter {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok {
		return r
	}
	return noReporter{}
}

type noReporter struct{}

func (noReporter) Report(float64, float64, string) {}
func (noReporter) Done(string)                     {}

// progress turns registry changes into notifications/progress for one
// blocking call (step count, last tool), at most one per ProgressLimiter
// interval, through the call's Reporter (the server's also keeps the stream
// alive while nothing changes). Its goroutine ends with stop.
type progress struct {
	send    func(n int, msg string)
	updates chan jobs.Snapshot
	done    chan struct{}
	ended   chan struct{}
}

func newProgress(ctx context.Context, req mcp.CallToolRequest, o AgentToolOptions) *progress {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		p := &progress{ended: make(chan struct{})}
		close(p.ended)
		return p
	}
	rep := reporterFrom(ctx)
	return startProgress(ctx, o, func(n int, msg string) { rep.Report(float64(n), 0, msg) })
}

// startProgress runs the progress loop with send as its only output.
func startProgress(ctx context.Context, o AgentToolOptions, send func(n int, msg string)) *progress {
	p := &progress{send: send, updates: make(chan jobs.Snapshot, 1), done: make(chan struct{}), ended: make(chan struct{})}
	go p.loop(ctx, o)
	return p
}

func (p *progress) report(s jobs.Snapshot) {
	if p.send == nil {
		return
	}
	select { // keep only the latest
	case p.updates <- s:
	default:
		select {
		case <-p.updates:
		default:
		}
		select {
		case p.updates <- s:
		default:
		}
	}
}

func (p *progress) loop(ctx context.Context, o AgentToolOptions) {
	defer close(p.ended)
	n := 0
	var last jobs.Snapshot
	var lastSent time.Time
	pending := false
	limiter := time.NewTimer(0)
	defer limiter.Stop()
	send := func() {
		n++
		p.send(n, progressMessage(last))
		lastSent, pending = time.Now(), false
	}
	for {
		select {
		case <-p.done:
			return
		case <-ctx.Done():
			return
		case s := <-p.updates:
			last, pending = s, true
			if wait := o.ProgressLimiter - time.Since(lastSent); wait <= 0 {
				send()
			} else {
				limiter.Reset(wait)
			}
		case <-limiter.C:
			if pending {
				send()
			}
		}
	}
}

func (p *progress) stop() {
	select {
	case <-p.ended:
		return
	default:
	}
	close(p.done)
	<-p.ended
}

func progressMessage(s jobs.Snapshot) string {
	msg := fmt.Sprintf("job %s %s: %s", s.ID, s.Status, plural(s.Steps, "tool call"))
	if s.Status == jobs.StatusQueued {
		msg += fmt.Sprintf(", queue position %d", s.QueuePosition)
	}
	if s.LastTool != "" {
		msg += ", last " + s.LastTool
	}
	if s.Approval != nil {
		msg += ", waiting for approval: " + s.Approval.Summary
	}
	return msg
}

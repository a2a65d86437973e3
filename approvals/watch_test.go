package approvals

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// fakeSink records what the watcher tells the registry. A job is live while
// it runs or waits; ended jobs stay in the map but are not live.
type fakeSink struct {
	mu    sync.Mutex
	state map[string]string // job id → "running", "waiting" or "ended"
	calls []string          // "id=request:summary" or "id=running"
}

var _ Sink = (*fakeSink)(nil)

func (f *fakeSink) LiveJobs() []LiveJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []LiveJob
	for id, st := range f.state {
		if st != "ended" {
			out = append(out, LiveJob{ID: id, Waiting: st == "waiting"})
		}
	}
	return out
}

func (f *fakeSink) SetWaiting(id string, p *PendingRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p == nil {
		f.state[id] = "running"
		f.calls = append(f.calls, id+"=running")
		return
	}
	f.state[id] = "waiting"
	f.calls = append(f.calls, id+"="+p.ID+":"+p.Summary)
}

func (f *fakeSink) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[id] = "ended"
}

func (f *fakeSink) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// submitWaiting queues a request the way the approval child does and returns
// the channel its decision arrives on, once the request is on disk.
func submitWaiting(t *testing.T, q *Queue, jobID, cmd string) (PendingRequest, <-chan Decision) {
	t.Helper()
	ch := make(chan Decision, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req := rules.Request{Tool: "Bash", Input: map[string]any{"command": cmd}}
	go func() { // owner: this test; ends with a decision or at cleanup
		d, _ := q.Submit(ctx, jobID, req, rules.Classify(req, rules.Policy{Workspace: "/ws"}), time.Minute)
		ch <- d
	}()
	var ps []PendingRequest
	var err error
	if !poll.Until(10*time.Second, func() bool { ps, err = q.PendingForJob(jobID); return err != nil || len(ps) > 0 }) {
		t.Fatal("the request never reached the queue")
	}
	if err != nil {
		t.Fatal(err)
	}
	return ps[0], ch
}

// The watcher shows a live job's pending request, puts the job back to
// running once it is decided, and denies the requests of jobs that are over.
func TestWatchShowsWaitingAndCancelsEndedJobs(t *testing.T) {
	q, _ := newQueue(t)
	const live, ended, unknownJob = "live", "ended", "gone"
	sink := &fakeSink{state: map[string]string{live: "running", ended: "running"}}
	shown := map[string]string{}

	pr, decided := submitWaiting(t, q, live, "echo a && echo b")
	syncPending(q, sink, shown)
	syncPending(q, sink, shown) // a second pass changes nothing
	if got := sink.callList(); !slices.Equal(got, []string{live + "=" + pr.ID + ":" + pr.Summary}) || !strings.Contains(pr.Summary, "echo a && echo b") {
		t.Fatalf("calls %v (request %+v)", got, pr)
	}
	if err := q.Decide(pr.ID, true, "fine", "test"); err != nil {
		t.Fatal(err)
	}
	if d := <-decided; !d.Approved {
		t.Fatalf("decision %+v", d)
	}
	syncPending(q, sink, shown)
	if got := sink.callList(); len(got) != 2 || got[1] != live+"=running" {
		t.Fatalf("calls %v", got)
	}

	// A job that ended while its request waited, and one the registry never knew.
	_, endedDecision := submitWaiting(t, q, ended, "rm -rf build")
	_, unknownDecision := submitWaiting(t, q, unknownJob, "rm -rf dist")
	sink.end(ended)
	syncPending(q, sink, shown)
	for name, ch := range map[string]<-chan Decision{ended: endedDecision, unknownJob: unknownDecision} {
		select {
		case d := <-ch:
			if d.Approved || d.Kind != KindCancel {
				t.Errorf("%s: decision %+v, want a cancel deny", name, d)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: its request was never denied", name)
		}
	}
	if ps, _ := q.Pending(); len(ps) != 0 {
		t.Errorf("still pending: %+v", ps)
	}
	if got := sink.callList(); len(got) != 2 {
		t.Errorf("an ended job was touched: %v", got)
	}
}

// Watch returns once its context ends.
func TestWatchStopsWithContext(t *testing.T) {
	q, _ := newQueue(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { // owner: this test; joined below
		defer close(done)
		Watch(ctx, q, &fakeSink{state: map[string]string{}})
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("watcher still running after its context ended")
	}
}

// Decided requests stay while young (Watch prunes at its start) and go
// keepDecided later; the audit log keeps their history.
func TestWatchPrunesDecidedRequests(t *testing.T) {
	q, dir := newQueue(t)
	left, leftDecision := submitWaiting(t, q, "old-job", "rm -rf build")
	decided, decidedCh := submitWaiting(t, q, "older-job", "rm -rf dist")
	if err := q.Decide(decided.ID, false, "no", "test"); err != nil {
		t.Fatal(err)
	}
	<-decidedCh
	if _, err := q.CancelAll("the bridge restarted; the job that asked is gone"); err != nil { // what a boot does
		t.Fatal(err)
	}
	<-leftDecision
	// Both are decided and young: nothing is pruned yet; an hour later both go.
	prune(q, time.Now())
	reqFile := func(id string) string { return filepath.Join(dir.Approvals(), id+".request.json") }
	for _, id := range []string{left.ID, decided.ID} {
		if _, err := os.Stat(reqFile(id)); err != nil {
			t.Errorf("%s pruned too early: %v", id, err)
		}
	}
	prune(q, time.Now().Add(keepDecided+time.Minute))
	for _, id := range []string{left.ID, decided.ID} {
		if _, err := os.Stat(reqFile(id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not pruned: %v", id, err)
		}
	}
	if lines, err := ReadAudit(dir, true); err != nil || len(lines) == 0 {
		t.Errorf("the audit log lost the history: %d lines, %v", len(lines), err)
	}
}

package jobs

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// auditGuard is a rootGuard whose Audit records each call and reports one
// quarantined path per job.
type auditGuard struct {
	rootGuard
	mu    *sync.Mutex
	calls *[]string
}

func (g auditGuard) Audit(_ context.Context, id, ws string) sandbox.AuditResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	*g.calls = append(*g.calls, id)
	return sandbox.AuditResult{
		Quarantined: []sandbox.Quarantined{{Path: ".git", What: "git dir", Change: "created", MovedTo: ".git.quarantined-" + id}},
		Note:        "audited " + ws,
	}
}

// Changes lists one file the job's command made, and a diff over the
// payload's bound.
func (g auditGuard) Changes(_ context.Context, id, ws string) (changes.Report, error) {
	return changes.Report{
		Changes: []changes.Change{{Path: "made.txt", Change: changes.Created, Size: 3}},
		Diff:    strings.Repeat("+line of the diff\n", MaxDiffBytes/10),
	}, nil
}

// The end-of-job audit and the list of changes run once in every end state
// — done, error, cancelled, interrupted by a shutdown and found interrupted
// by a restart — and what they found is in the final snapshot on disk.
func TestAuditRunsInEveryEndState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls []string
		e := newEnv(t, func(o *Options) {
			o.Guard = auditGuard{o.Guard.(rootGuard), &mu, &calls}
			o.MaxConcurrent = 4
		})
		check := func(s Snapshot, want Status) {
			t.Helper()
			if s.Status != want {
				t.Fatalf("status %s, want %s", s.Status, want)
			}
			d := e.onDisk(s.ID)
			if len(d.Quarantined) != 1 || d.Quarantined[0].MovedTo != ".git.quarantined-"+s.ID || d.AuditNote != "audited "+e.ws {
				t.Fatalf("%s: snapshot on disk has quarantined %+v, note %q", want, d.Quarantined, d.AuditNote)
			}
			// And what it changed on disk, the diff cut to the payload's bound.
			if len(d.Changes) != 1 || d.Changes[0].Path != "made.txt" || !d.DiffTruncated || len(d.Diff) > MaxDiffBytes+100 || d.DiffBytes != MaxDiffBytes/10*len("+line of the diff\n") || !strings.Contains(d.Diff, "[diff cut here") {
				t.Fatalf("%s: snapshot on disk has changes %+v, diff of %d bytes (truncated %v, whole %d)", want, d.Changes, len(d.Diff), d.DiffTruncated, d.DiffBytes)
			}
		}
		done := e.start("done")
		check(e.succeed(e.nextRun(), done.ID), StatusDone)

		failed := e.start("fails")
		r := e.nextRun()
		r.end(harness.Exit{Code: 1})
		check(e.settle(failed.ID), StatusError)

		cancelled := e.start("cancelled")
		e.nextRun()
		if _, err := e.r.Cancel(context.Background(), cancelled.ID); err != nil {
			t.Fatal(err)
		}
		check(e.settle(cancelled.ID), StatusCancelled)

		// A daemon that died while a job ran: the next one audits it.
		crashed := e.start("crashed")
		e.nextRun()
		synctest.Wait()
		e2 := &env{t: t, dir: e.dir, ws: e.ws, h: newFakeHarness(), opts: e.opts}
		e2.opts.Harness = e2.h
		r2 := e2.open()
		got, err := r2.Get(crashed.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusInterrupted || len(got.Quarantined) != 1 || len(got.Changes) != 1 || got.StopReason != StopInterruptedByRestart {
			t.Fatalf("restart: %s (%s), quarantined %+v, changes %+v", got.Status, got.StopReason, got.Quarantined, got.Changes)
		}
		mu.Lock()
		n := map[string]int{}
		for _, c := range calls {
			n[c]++
		}
		mu.Unlock()
		for _, id := range []string{done.ID, failed.ID, cancelled.ID, crashed.ID} {
			if n[id] != 1 {
				t.Errorf("job %s audited %d times, want once: %v", id, n[id], calls)
			}
		}
		_ = r2.Close(context.Background())
		_ = e.r.Close(context.Background())
	})
}

// incompleteGuard reports a walk record that could not see everything.
type incompleteGuard struct{ rootGuard }

func (incompleteGuard) Changes(context.Context, string, string) (changes.Report, error) {
	return changes.Report{Incomplete: true, Note: "the workspace is too large to compare whole"}, nil
}

// A job that completed but whose record of changes is incomplete ends
// done_unverified, with its result and nonce: done, and saying so.
func TestIncompleteRecordEndsDoneUnverified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.Guard = incompleteGuard{o.Guard.(rootGuard)} })
		s := e.start("done")
		got := e.succeed(e.nextRun(), s.ID)
		if got.Status != StatusDoneUnverified || !got.Status.Done() || !got.Status.Final() || got.Nonce == "" {
			t.Fatalf("status %s, nonce %q", got.Status, got.Nonce)
		}
		if d := e.onDisk(s.ID); d.Status != StatusDoneUnverified || d.ChangesNote == "" {
			t.Fatalf("on disk: %s, note %q", d.Status, d.ChangesNote)
		}
		_ = e.r.Close(context.Background())
	})
}

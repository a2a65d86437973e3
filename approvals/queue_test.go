package approvals

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals/rules"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func newQueue(t *testing.T) (*Queue, statedir.Dir) {
	t.Helper()
	dir, err := statedir.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return NewQueue(dir, zerolog.Nop()), dir
}

var chained = rules.Request{Tool: "Bash", Input: map[string]any{"command": "make && make install"}}

func chainedVerdict() rules.Verdict {
	return rules.Verdict{Decision: rules.Ask, Reason: "the command contains chaining (&)", Summary: "Bash: make && make install"}
}

type submitResult struct {
	d   Decision
	err error
}

// submitAsync starts Submit and waits (in the bubble) until it is blocked
// waiting, returning the queued request and the result channel.
func submitAsync(t *testing.T, q *Queue, ctx context.Context, job string, timeout time.Duration) (PendingRequest, <-chan submitResult) {
	t.Helper()
	res := make(chan submitResult, 1)
	go func() {
		d, err := q.Submit(ctx, job, chained, chainedVerdict(), timeout)
		res <- submitResult{d, err}
	}()
	synctest.Wait()
	open, err := q.PendingForJob(job)
	if err != nil || len(open) != 1 {
		t.Fatalf("PendingForJob(%s) = %v, %v; want one request", job, open, err)
	}
	return open[0], res
}

func auditEvents(t *testing.T, dir statedir.Dir) []string {
	t.Helper()
	recs, err := ReadAudit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	var ev []string
	for _, r := range recs {
		ev = append(ev, r.Event+":"+string(r.Decision))
	}
	return ev
}

func TestQueueApprove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, dir := newQueue(t)
		pr, res := submitAsync(t, q, t.Context(), "job1", 5*time.Minute)

		if !ids.Valid(pr.ID) || pr.JobID != "job1" || pr.Tool != "Bash" || pr.Input["command"] != "make && make install" ||
			pr.Summary == "" || !strings.Contains(pr.Reason, "chaining") || pr.Expires.Sub(pr.Created) != 5*time.Minute {
			t.Fatalf("pending request = %+v", pr)
		}
		fi, err := os.Stat(filepath.Join(dir.Approvals(), pr.ID+".request.json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("request file: %v, mode %v; want 0600", err, fi.Mode())
		}
		all, _ := q.Pending()
		if len(all) != 1 {
			t.Fatalf("Pending = %v", all)
		}
		if other, _ := q.PendingForJob("job2"); len(other) != 0 {
			t.Fatalf("PendingForJob(job2) = %v", other)
		}

		if err := q.Decide(pr.ID, true, "looks fine", "alice"); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if r.err != nil || !r.d.Approved || r.d.Kind != KindHuman || r.d.By != "alice" || r.d.Message() != "" {
			t.Fatalf("Submit = %+v, %v; want a human approval", r.d, r.err)
		}
		fi, err = os.Stat(filepath.Join(dir.Approvals(), pr.ID+".decision.json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("decision file: %v, mode %v; want 0600", err, fi.Mode())
		}
		if open, _ := q.Pending(); len(open) != 0 {
			t.Fatalf("still pending after approval: %v", open)
		}
		if err := q.Decide(pr.ID, false, "", "bob"); !errors.Is(err, ErrAlreadyDecided) || !strings.Contains(err.Error(), "approved by alice") {
			t.Fatalf("second Decide = %v, want ErrAlreadyDecided", err)
		}
		want := []string{"pending:", "human:allow", "applied:allow"} // the child records what it lets run
		if got := auditEvents(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("audit = %v, want %v", got, want)
		}
	})
}

func TestQueueDenyCarriesReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, dir := newQueue(t)
		pr, res := submitAsync(t, q, t.Context(), "job1", time.Minute)
		if err := q.Decide(pr.ID, false, "do not install things.", "alice"); err != nil {
			t.Fatal(err)
		}
		r := <-res
		want := "Denied by the owner: do not install things. Do not try to work around this denial; report it in your final answer."
		if r.d.Approved || r.d.Message() != want {
			t.Fatalf("Submit = %+v, message %q; want %q", r.d, r.d.Message(), want)
		}
		recs, _ := ReadAudit(dir, false)
		last := recs[len(recs)-1]
		if last.Event != EventHuman || last.Decision != rules.Deny || last.Reason != "do not install things." || last.By != "alice" || last.JobID != "job1" {
			t.Fatalf("last audit record = %+v", last)
		}
	})
}

func TestQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, dir := newQueue(t)
		start := time.Now()
		d, err := q.Submit(t.Context(), "job1", chained, chainedVerdict(), 5*time.Minute)
		if err != nil || d.Approved || d.Kind != KindTimeout {
			t.Fatalf("Submit = %+v, %v; want a timeout denial", d, err)
		}
		if waited := time.Since(start); waited != 5*time.Minute {
			t.Fatalf("waited %s, want exactly the timeout", waited)
		}
		if msg := d.Message(); !strings.Contains(msg, "no answer from the owner within 5m0s") || !strings.Contains(msg, "Do not try to work around") {
			t.Fatalf("message %q", msg)
		}
		if err := q.Decide(d.ID, true, "", "alice"); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "cannot be approved") {
			t.Fatalf("approving an expired request = %v, want ErrExpired", err)
		}
		want := []string{"pending:", "timeout:deny"}
		if got := auditEvents(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("audit = %v, want %v", got, want)
		}
	})
}

func TestQueueExpiredWithoutWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newQueue(t)
		// A request whose waiter died: it expired with no decision file.
		id, _ := ids.New()
		now := time.Now().UTC()
		pr := PendingRequest{Version: 1, ID: id, JobID: "job1", Tool: "Bash", Created: now.Add(-time.Hour), Expires: now.Add(-time.Minute)}
		if err := statedir.WriteJSON(q.requestPath(id), pr); err != nil {
			t.Fatal(err)
		}
		if open, _ := q.Pending(); len(open) != 0 {
			t.Fatalf("an expired request is listed as pending: %v", open)
		}
		if err := q.Decide(id, true, "", "alice"); !errors.Is(err, ErrExpired) {
			t.Fatalf("Decide(expired) = %v, want ErrExpired", err)
		}
		if _, err := os.Stat(q.decisionPath(id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a decision was written for an expired request: %v", err)
		}
	})
}

func TestQueueCancel(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, dir := newQueue(t)
			ctx, cancel := context.WithCancel(t.Context())
			pr, res := submitAsync(t, q, ctx, "job1", time.Hour)
			cancel()
			r := <-res
			if r.d.Approved || r.d.Kind != KindCancel || !strings.Contains(r.d.Message(), "cancelled") {
				t.Fatalf("Submit after cancel = %+v", r.d)
			}
			if err := q.Decide(pr.ID, true, "", "alice"); !errors.Is(err, ErrAlreadyDecided) {
				t.Fatalf("Decide after cancel = %v", err)
			}
			if got := auditEvents(t, dir); strings.Join(got, ",") != "pending:,cancel:deny" {
				t.Fatalf("audit = %v", got)
			}
		})
	})
	t.Run("CancelJob", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q, dir := newQueue(t)
			_, res := submitAsync(t, q, t.Context(), "job1", time.Hour)
			_, other := submitAsync(t, q, t.Context(), "job2", time.Hour)
			n, err := q.CancelJob("job1")
			if err != nil || n != 1 {
				t.Fatalf("CancelJob = %d, %v", n, err)
			}
			r := <-res
			if r.d.Approved || r.d.Kind != KindCancel {
				t.Fatalf("Submit after CancelJob = %+v", r.d)
			}
			if open, _ := q.PendingForJob("job2"); len(open) != 1 {
				t.Fatalf("CancelJob(job1) touched job2: %v", open)
			}
			if n, _ := q.CancelJob("job1"); n != 0 {
				t.Fatalf("second CancelJob = %d", n)
			}
			if n, _ := q.CancelJob("job2"); n != 1 {
				t.Fatal("job2 not cancelled")
			}
			<-other
			if got := auditEvents(t, dir); strings.Join(got, ",") != "pending:,pending:,cancel:deny,cancel:deny" {
				t.Fatalf("audit = %v", got)
			}
		})
	})
}

func TestQueueCorruptDecision(t *testing.T) {
	cases := map[string]func(q *Queue, id string) error{
		"not json": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte("{approved: yes"), 0o600)
		},
		"empty": func(q *Queue, id string) error { return os.WriteFile(q.decisionPath(id), nil, 0o600) },
		"no approved field": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte(`{"version":1,"id":"`+id+`","kind":"human","decided":"2000-01-01T00:00:00Z"}`), 0o600)
		},
		"wrong id": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte(`{"version":1,"id":"00000000000000000000000000000000","approved":true,"kind":"human","decided":"2000-01-01T00:00:00Z"}`), 0o600)
		},
		"approved by a timeout": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte(`{"version":1,"id":"`+id+`","approved":true,"kind":"timeout","decided":"2000-01-01T00:00:00Z"}`), 0o600)
		},
		"unknown field": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte(`{"version":1,"id":"`+id+`","approved":true,"kind":"human","decided":"2000-01-01T00:00:00Z","sudo":true}`), 0o600)
		},
		"wrong version": func(q *Queue, id string) error {
			return os.WriteFile(q.decisionPath(id), []byte(`{"version":9,"id":"`+id+`","approved":true,"kind":"human","decided":"2000-01-01T00:00:00Z"}`), 0o600)
		},
		"a directory": func(q *Queue, id string) error { return os.Mkdir(q.decisionPath(id), 0o700) },
		"a symlink": func(q *Queue, id string) error {
			good := filepath.Join(filepath.Dir(q.decisionPath(id)), "elsewhere.json")
			if err := os.WriteFile(good, []byte(`{"version":1,"id":"`+id+`","approved":true,"kind":"human","by":"x","reason":"","decided":"2000-01-01T00:00:00Z"}`), 0o600); err != nil {
				return err
			}
			return os.Symlink(good, q.decisionPath(id))
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, dir := newQueue(t)
				pr, res := submitAsync(t, q, t.Context(), "job1", time.Hour)
				if err := plant(q, pr.ID); err != nil {
					t.Fatal(err)
				}
				r := <-res
				if r.d.Approved || r.d.Kind != KindCorrupt || !strings.Contains(r.d.Message(), "corrupt or malformed") {
					t.Fatalf("Submit with a %s decision = %+v", name, r.d)
				}
				if got := auditEvents(t, dir); strings.Join(got, ",") != "pending:,corrupt:deny" {
					t.Fatalf("audit = %v", got)
				}
			})
		})
	}
}

func TestDecideUnknownID(t *testing.T) {
	q, _ := newQueue(t)
	for _, id := range []string{"", "nope", "../../etc/passwd", strings.Repeat("0", 32), strings.Repeat("A", 32)} {
		err := q.Decide(id, true, "", "alice")
		if !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), "bridgectl pending") {
			t.Errorf("Decide(%q) = %v, want ErrUnknownID with a hint", id, err)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id, err := ids.New()
		if err != nil || !ids.Valid(id) || seen[id] {
			t.Fatalf("ids.New = %q, %v (dup %v)", id, err, seen[id])
		}
		seen[id] = true
	}
}

func TestApprovalOffFlag(t *testing.T) {
	_, dir := newQueue(t)
	if ApprovalOff(dir) {
		t.Fatal("approval off in a fresh state dir")
	}
	if err := SetApprovalOff(dir, "alice"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir.ApprovalOffFlag())
	if err != nil || fi.Mode().Perm() != 0o600 || !ApprovalOff(dir) {
		t.Fatalf("flag after SetApprovalOff: %v %v", fi, err)
	}
	if err := ClearApprovalOff(dir); err != nil || ApprovalOff(dir) {
		t.Fatalf("ClearApprovalOff: %v, still off %v", err, ApprovalOff(dir))
	}
	if err := ClearApprovalOff(dir); err != nil {
		t.Fatalf("clearing twice: %v", err)
	}
}

func TestReadAudit(t *testing.T) {
	_, dir := newQueue(t)
	if recs, err := ReadAudit(dir, false); err != nil || len(recs) != 0 {
		t.Fatalf("ReadAudit of no log = %v, %v", recs, err)
	}
	for i := range AuditTail + 20 {
		if err := AppendAudit(dir, AuditRecord{Event: EventAuto, Tool: "Bash", Summary: strings.Repeat("x", i%3)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := statedir.AppendLine(dir.AuditLog(), []byte("garbage line")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir.AuditLog())
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log mode %v", fi.Mode())
	}
	tail, err := ReadAudit(dir, false)
	if err != nil || len(tail) != AuditTail {
		t.Fatalf("tail = %d records, %v", len(tail), err)
	}
	if last := tail[len(tail)-1]; last.Event != EventUnreadable || last.Reason != "line 71 is not a whole record (12 bytes): garbage line" {
		t.Fatalf("last = %+v", last)
	}
	all, _ := ReadAudit(dir, true)
	if len(all) != AuditTail+21 || all[0].Time.IsZero() {
		t.Fatalf("all = %d records", len(all))
	}

	// A record cut short keeps what was whole in it.
	torn := `{"time":"2026-05-01T10:00:00Z","event":"auto","job_id":"j1","tool":"Bash","summary":"Bash: make","input":{"comm`
	if err := statedir.AppendLine(dir.AuditLog(), []byte(torn)); err != nil {
		t.Fatal(err)
	}
	all, _ = ReadAudit(dir, true)
	got := all[len(all)-1]
	if got.Event != EventUnreadable || got.JobID != "j1" || got.Tool != "Bash" || got.Summary != "Bash: make" || got.Time.IsZero() ||
		!strings.HasPrefix(got.Reason, "line 72 is not a whole record (111 bytes; its event: auto): ") {
		t.Errorf("torn record = %+v", got)
	}
}

func TestQueueCancelAllAndPrune(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, dir := newQueue(t)
		_, r1 := submitAsync(t, q, t.Context(), "job1", time.Hour)
		_, r2 := submitAsync(t, q, t.Context(), "job2", time.Hour)
		n, err := q.CancelAll("the daemon restarted")
		if err != nil || n != 2 {
			t.Fatalf("CancelAll = %d, %v", n, err)
		}
		for _, r := range []<-chan submitResult{r1, r2} {
			if d := (<-r).d; d.Approved || d.Kind != KindCancel || !strings.Contains(d.Message(), "daemon restarted") {
				t.Fatalf("after CancelAll: %+v", d)
			}
		}
		_, r3 := submitAsync(t, q, t.Context(), "job3", time.Hour) // still open: must survive Prune
		time.Sleep(time.Minute)                                    // fake time: the first two are now a minute old
		synctest.Wait()
		n, err = q.Prune(time.Now())
		if err != nil || n != 2 {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		entries, _ := os.ReadDir(dir.Approvals())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) != 1 || !strings.HasSuffix(names[0], ".request.json") {
			t.Fatalf("after Prune: %v", names)
		}
		if open, _ := q.Pending(); len(open) != 1 || open[0].JobID != "job3" {
			t.Fatalf("Pending after Prune = %v", open)
		}
		q.CancelJob("job3")
		<-r3
		if got := auditEvents(t, dir); strings.Count(strings.Join(got, ","), "cancel:deny") != 3 {
			t.Fatalf("audit = %v", got)
		}
	})
}

func TestRequestFileClipsLongInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newQueue(t)
		big := strings.Repeat("x", 1<<20)
		req := rules.Request{Tool: "Write", Input: map[string]any{"file_path": "/tmp/x", "content": big, "meta": []any{map[string]any{"k": big}}}}
		res := make(chan Decision, 1)
		go func() {
			d, _ := q.Submit(t.Context(), "job1", req, rules.Verdict{Decision: rules.Ask, Reason: "outside", Summary: "Write /tmp/x"}, time.Minute)
			res <- d
		}()
		synctest.Wait()
		open, _ := q.Pending()
		if len(open) != 1 {
			t.Fatalf("Pending = %v", open)
		}
		fi, _ := os.Stat(q.requestPath(open[0].ID))
		if fi.Size() > 3*maxShownString+1024 {
			t.Fatalf("request file is %d bytes", fi.Size())
		}
		in := open[0].Input
		if in["_clipped"] != true || in["file_path"] != "/tmp/x" || !strings.HasSuffix(in["content"].(string), "more bytes]") {
			t.Fatalf("stored input = %.200v", in)
		}
		if len(req.Input["content"].(string)) != 1<<20 {
			t.Fatal("the caller's input was modified")
		}
		q.CancelJob("job1")
		<-res
	})
}

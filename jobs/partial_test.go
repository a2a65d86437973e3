package jobs

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// What a stopped job reports: a command it started is listed even when its
// result never came (with a note saying so), and a file is listed as written or
// touched only when its Write/Edit succeeded.
func TestStoppedJobReportsWhatItReallyDid(t *testing.T) {
	synctest.Test(t, testStoppedJobReportsWhatItReallyDid)
}

func testStoppedJobReportsWhatItReallyDid(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("x")
	run := e.nextRun()
	ok, failed, denied, inFlight := filepath.Join(e.ws, "ok"), filepath.Join(e.ws, "failed"), filepath.Join(e.ws, "denied"), filepath.Join(e.ws, "inflight")
	deniedResult := evToolResult("w3", true, nil)
	deniedResult.ToolResult.Denied = true
	run.send(
		evToolUse("b1", "Bash", "make test"), evToolResult("b1", false, intp(2)),
		evToolUse("w1", "Write", ok), evToolResult("w1", false, nil),
		evToolUse("w2", "Edit", failed), evToolResult("w2", true, nil),
		evToolUse("w3", "Write", denied), deniedResult,
		evToolUse("w4", "Write", inFlight),
		evToolUse("b2", "Bash", "sleep 300"), // still running when cancelled
	)
	// The running snapshot already lists the command that has not finished.
	if c := e.applied(s.ID).Commands; len(c) != 2 {
		t.Fatalf("running snapshot lists commands %+v, want both", c)
	}
	got, err := e.r.Cancel(t.Context(), s.ID)
	if err != nil || got.Status != StatusCancelled {
		t.Fatalf("cancel = %s, %v", got.Status, err)
	}
	want := []struct{ cmd, status string }{{"make test", "exit 2"}, {"sleep 300", NoteNoResult}}
	if len(got.Commands) != len(want) {
		t.Fatalf("commands = %+v", got.Commands)
	}
	for i, w := range want {
		if c := got.Commands[i]; c.Command != w.cmd || c.Status() != w.status {
			t.Errorf("command %d = %q (%s), want %q (%s)", i, c.Command, c.Status(), w.cmd, w.status)
		}
	}
	if !slices.Equal(got.FilesWritten, []string{ok}) {
		t.Errorf("files_written = %v, want only %s", got.FilesWritten, ok)
	}
	if got.Partial == nil || !slices.Equal(got.Partial.FilesTouched, []string{ok}) {
		t.Errorf("partial files_touched = %+v, want only %s", got.Partial, ok)
	}
	if d := e.onDisk(s.ID); len(d.Commands) != 2 || d.Commands[1].Status() != NoteNoResult {
		t.Errorf("on disk commands = %+v", d.Commands)
	}
	run.end(harness.Exit{})
}

func TestCommandStatus(t *testing.T) {
	for _, c := range []struct {
		c    Command
		want string
	}{
		{Command{Command: "ls", ExitCode: intp(0)}, "exit 0"},
		{Command{Command: "false", ExitCode: intp(1)}, "exit 1"},
		{Command{Command: "rm -rf /", Denied: true}, "denied"},
		{Command{Command: "sleep 9"}, "running"},
		{Command{Command: "sleep 9", Note: NoteNotRun}, NoteNotRun},
	} {
		if got := c.c.Status(); got != c.want {
			t.Errorf("%q: %s, want %s", c.c.Command, got, c.want)
		}
	}
}

// TestSettleCommands: once a job ends, a command without a result says why;
// the one it waited on approval for never ran, the others may have run.
func TestSettleCommands(t *testing.T) {
	cmds := func() []Command {
		return []Command{{Command: "ls", ExitCode: intp(0)}, {Command: "rm x", Denied: true}, {Command: "make &"}, {Command: "ls; id"}}
	}
	waited := cmds()
	settleCommands(waited, true)
	stopped := cmds()
	settleCommands(stopped, false)
	for _, tc := range []struct {
		got  []Command
		want []string
	}{
		{waited, []string{"exit 0", "denied", NoteNoResult, NoteNotRun}},
		{stopped, []string{"exit 0", "denied", NoteNoResult, NoteNoResult}},
	} {
		for i, w := range tc.want {
			if g := tc.got[i].Status(); g != w {
				t.Errorf("command %q: %s, want %s", tc.got[i].Command, g, w)
			}
		}
	}
}

// A command Claude Code refuses itself (no exit status, an error) says so.
func TestCommandRefusedByTheHarness(t *testing.T) {
	synctest.Test(t, testCommandRefusedByTheHarness)
}

func testCommandRefusedByTheHarness(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("task")
	run := e.nextRun()
	blocked := evToolResult("b1", true, nil)
	blocked.ToolResult.Text = "Blocked: sleep 120 followed by other commands\nmore"
	run.send(evToolUse("b1", "Bash", "sleep 120; ls"), blocked)
	if c := e.applied(s.ID).Commands; len(c) != 1 || c[0].Note == "" {
		t.Fatalf("running snapshot lists commands %+v, want the refused one with a note", c)
	}
	got, err := e.r.Cancel(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Commands[0].Status(); st != "failed without an exit status: Blocked: sleep 120 followed by other commands" {
		t.Errorf("status %q", st)
	}
	run.end(harness.Exit{})
}

// applied returns job id's snapshot once its runner has folded every event
// sent so far and waits for the next. Call it inside a synctest bubble.
func (e *env) applied(id string) Snapshot {
	e.t.Helper()
	synctest.Wait()
	s, err := e.r.Get(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// A wait on a job that is already waiting for approval hands that state to
// onChange at once, so a caller that stops waiting on it (the agent tools)
// returns now, not at the end of its wait.
func TestWaitSeesAnApprovalAlreadyPending(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("x")
	run := e.nextRun()
	e.r.SetWaiting(s.ID, &ApprovalInfo{ID: "req-1", Summary: "rm -rf build"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var seen []Status
	got, err := e.r.Wait(ctx, s.ID, time.Hour, func(s Snapshot) {
		seen = append(seen, s.Status)
		if s.Status == StatusWaitingApproval {
			cancel()
		}
	})
	if err != nil || got.Status != StatusWaitingApproval || got.Approval == nil || got.Approval.ID != "req-1" {
		t.Fatalf("Wait = %s %+v, %v", got.Status, got.Approval, err)
	}
	if !slices.Equal(seen, []Status{StatusWaitingApproval}) {
		t.Errorf("onChange saw %v", seen)
	}
	// A final job is returned without an onChange call.
	e.succeed(run, s.ID)
	seen = nil
	if got, _ := e.r.Wait(t.Context(), s.ID, time.Hour, func(s Snapshot) { seen = append(seen, s.Status) }); got.Status != StatusDone || len(seen) != 0 {
		t.Errorf("final: %s, onChange saw %v", got.Status, seen)
	}
}

// Every status change is on disk before a waiter is told of it: whoever
// polls the daemon and then reads jobs/<id>.json (bridgectl) sees the same
// status, for a queued job starting and for waiting_approval and back.
func TestStatusOnDiskBeforeWaitersAreTold(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConcurrent = 1 })
	a := e.start("a")
	runA := e.nextRun()
	b := e.start("b")
	if b.Status != StatusQueued {
		t.Fatalf("b is %s", b.Status)
	}
	watch := func(id string, until Status) <-chan []seen {
		out := make(chan []seen, 1)
		ready := make(chan struct{})
		go func() { // owner: this test; joined through out
			var log []seen
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			first := true
			e.r.Wait(ctx, id, 10*time.Second, func(s Snapshot) {
				if first { // the state at the start of the wait: the watcher is listening
					first = false
					close(ready)
					return
				}
				d, err := Load(e.dir, id)
				if err != nil {
					t.Error(err)
				}
				log = append(log, seen{s.Status, d.Status})
				if s.Status == until {
					cancel()
				}
			})
			out <- log
		}()
		<-ready
		return out
	}

	// queued → running, told once a's end frees the slot.
	bWatch := watch(b.ID, StatusRunning)
	e.succeed(runA, a.ID)
	runB := e.nextRun()
	// running → waiting_approval → running.
	for _, step := range []struct {
		until Status
		do    func()
	}{
		{StatusWaitingApproval, func() { e.r.SetWaiting(b.ID, &ApprovalInfo{ID: "r", Summary: "s"}) }},
		{StatusRunning, func() { e.r.SetWaiting(b.ID, nil) }},
	} {
		if step.until == StatusWaitingApproval {
			checkTold(t, <-bWatch, StatusRunning)
		}
		w := watch(b.ID, step.until)
		step.do()
		checkTold(t, <-w, step.until)
	}
	e.succeed(runB, b.ID)
}

// seen is one notification: the status told and the status on disk then.
type seen struct{ told, disk Status }

func checkTold(t *testing.T, log []seen, until Status) {
	t.Helper()
	if len(log) == 0 || log[len(log)-1].told != until {
		t.Fatalf("waiter never told %s: %+v", until, log)
	}
	for _, s := range log {
		if s.told != s.disk {
			t.Errorf("told %s while the disk said %s", s.told, s.disk)
		}
	}
}

// A command waiting for approval is listed as waiting, not as run: the start
// payload had said {"command":"rm old.txt","runs":1} while it waited. Once
// approved it runs and counts; if the job ends while it waits, it never ran.
func TestAWaitingCommandIsNotListedAsRun(t *testing.T) {
	type listed struct {
		status string
		runs   int
	}
	check := func(t *testing.T, when string, got []Command, want []listed) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: commands %+v, want %d", when, got, len(want))
		}
		for i, w := range want {
			if c := got[i]; c.Command != "rm old.txt" || c.Status() != w.status || c.Runs != w.runs {
				t.Errorf("%s: command %d = %q (%s, runs %d), want %s, runs %d", when, i, c.Command, c.Status(), c.Runs, w.status, w.runs)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// callAfterRequest: the call's event comes after the daemon saw
		// its approval request.
		callAfterRequest bool
		answer           func(t *testing.T, e *env, run *fakeRun, id string) Snapshot
		after            []listed
	}{
		{"approved: it runs and counts", false, func(t *testing.T, e *env, run *fakeRun, id string) Snapshot {
			e.r.SetWaiting(id, nil)
			check(t, "approved, running", e.applied(id).Commands, []listed{{"exit 0", 2}, {"running", 2}})
			run.send(evToolResult("b2", false, intp(0)))
			return e.succeed(run, id)
		}, []listed{{"exit 0", 2}, {"exit 0", 2}}},
		{"the job ends while it waits: never run", false, func(t *testing.T, e *env, run *fakeRun, id string) Snapshot {
			got, err := e.r.Cancel(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			run.end(harness.Exit{})
			return got
		}, []listed{{"exit 0", 1}, {NoteNotRun, 1}}},
		{"its call folded after the request: waiting too", true, func(t *testing.T, e *env, run *fakeRun, id string) Snapshot {
			e.r.SetWaiting(id, nil)
			run.send(evToolResult("b2", false, intp(0)))
			return e.succeed(run, id)
		}, []listed{{"exit 0", 2}, {"exit 0", 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, nil)
				s := e.start("x")
				run := e.nextRun()
				run.send(evToolUse("b1", "Bash", "rm old.txt"), evToolResult("b1", false, intp(0)))
				if tc.callAfterRequest {
					e.r.SetWaiting(s.ID, &ApprovalInfo{ID: "ap1", Summary: "Bash: rm old.txt"})
					run.send(evToolUse("b2", "Bash", "rm old.txt"))
				} else {
					run.send(evToolUse("b2", "Bash", "rm old.txt"))
					check(t, "running", e.applied(s.ID).Commands, []listed{{"exit 0", 2}, {"running", 2}})
					e.r.SetWaiting(s.ID, &ApprovalInfo{ID: "ap1", Summary: "Bash: rm old.txt"})
				}
				check(t, "waiting", e.applied(s.ID).Commands, []listed{{"exit 0", 1}, {NoteWaiting, 1}})
				if !tc.callAfterRequest { // a folded event reaches disk at the next trace interval
					check(t, "waiting, on disk", e.onDisk(s.ID).Commands, []listed{{"exit 0", 1}, {NoteWaiting, 1}})
				}
				check(t, "after", tc.answer(t, e, run, s.ID).Commands, tc.after)
			})
		})
	}
}

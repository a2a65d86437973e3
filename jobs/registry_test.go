package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestDoneCarriesResultNonceAndTally(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("reverse the witness")
	if !hex32.MatchString(s.ID) || s.Status != StatusRunning {
		t.Fatalf("start = %s %s", s.ID, s.Status)
	}
	run := e.nextRun()
	if run.spec.Workspace != e.ws || run.spec.Task != "reverse the witness" || run.spec.JobID != s.ID ||
		run.spec.ConfigDir != e.dir.HarnessDir(s.ID) || run.spec.Token != "sk-test-double-key" || run.spec.Model != "deepseek-flash" {
		t.Fatalf("spec = %+v", run.spec)
	}
	answer := filepath.Join(e.ws, "answer.txt")
	run.send(
		harness.Event{Kind: harness.KindInit, SessionID: "sess"},
		evToolUse("t1", "Read", filepath.Join(e.ws, "witness.txt")), evToolResult("t1", false, nil),
		evToolUse("t2", "Write", answer), evToolResult("t2", false, nil),
		evToolUse("t3", "Bash", "false"), evToolResult("t3", true, intp(1)),
		evToolUse("t4", "Bash", "cat answer.txt"), evToolResult("t4", false, intp(0)),
		evText("wrote it"),
		evResult("success", false, "The answer is in answer.txt"),
	)
	run.end(harness.Exit{Code: 0})
	got := e.settle(s.ID)
	if got.Status != StatusDone || got.Result != "The answer is in answer.txt" || !hex32.MatchString(got.Nonce) {
		t.Fatalf("final = %s %q nonce %q err %q", got.Status, got.Result, got.Nonce, got.Error)
	}
	if got.Partial != nil || got.Error != "" {
		t.Errorf("done job carries partial %+v / error %q", got.Partial, got.Error)
	}
	if got.Steps != 4 || !strings.HasPrefix(got.LastTool, "Bash") {
		t.Errorf("steps %d last %q", got.Steps, got.LastTool)
	}
	if len(got.FilesWritten) != 1 || got.FilesWritten[0] != answer {
		t.Errorf("files_written = %v", got.FilesWritten)
	}
	if len(got.Commands) != 2 || *got.Commands[0].ExitCode != 1 || *got.Commands[1].ExitCode != 0 || got.Commands[1].Command != "cat answer.txt" {
		t.Errorf("commands = %+v", got.Commands)
	}
	wantUsage := Usage{InputTokens: 1000, OutputTokens: 500, CacheReadTokens: 4000, ThinkingTokens: 100}
	if got.Usage != wantUsage {
		t.Errorf("usage = %+v", got.Usage)
	}
	if want := deepseek.FlashPrice.Cost(4000, 1000, 500); got.CostUSD != want {
		t.Errorf("cost = %v, want %v", got.CostUSD, want)
	}
	disk := e.onDisk(s.ID)
	if disk.Status != StatusDone || disk.Nonce != got.Nonce || disk.Result != got.Result || disk.QueuePosition != 0 {
		t.Errorf("disk = %s nonce %q", disk.Status, disk.Nonce)
	}
	if st, _ := os.Stat(e.dir.JobFile(s.ID)); st.Mode().Perm() != 0o600 {
		t.Errorf("snapshot mode %v", st.Mode())
	}
}

func TestNotDoneWithoutSuccessfulResult(t *testing.T) {
	tests := []struct {
		name   string
		events []harness.Event
		exit   harness.Exit
		reason string
	}{
		{"error result", []harness.Event{evResult("success", true, "API Error: 402 Insufficient Balance")}, harness.Exit{Code: 1}, "Insufficient Balance"},
		{"max turns", []harness.Event{evResult("error_max_turns", true, "")}, harness.Exit{Code: 1}, "error_max_turns"},
		{"empty answer", []harness.Event{evResult("success", false, "")}, harness.Exit{Code: 0}, "empty"},
		{"no result line", []harness.Event{evText("thinking")}, harness.Exit{Code: 2, Stderr: "line one\nfatal: config broken\n"}, "fatal: config broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			s := e.start("task")
			run := e.nextRun()
			run.send(evToolUse("t1", "Bash", "ls"), evToolResult("t1", false, intp(0)))
			run.send(tt.events...)
			run.end(tt.exit)
			got := e.settle(s.ID)
			if got.Status != StatusError || got.Nonce != "" || got.Result != "" {
				t.Fatalf("got %s nonce %q result %q", got.Status, got.Nonce, got.Result)
			}
			if !strings.Contains(got.Error, tt.reason) {
				t.Errorf("error %q lacks %q", got.Error, tt.reason)
			}
			assertPartial(t, got, map[string]int{"Bash": 1})
			disk := e.onDisk(s.ID)
			if disk.Nonce != "" || disk.Result != "" || disk.Partial == nil {
				t.Errorf("disk snapshot carries nonce %q result %q", disk.Nonce, disk.Result)
			}
		})
	}
}

func assertPartial(t *testing.T, s Snapshot, tally map[string]int) {
	t.Helper()
	if s.Partial == nil || s.Partial.Label != PartialLabel || !strings.Contains(s.Partial.Label, "NOT A RESULT") {
		t.Fatalf("partial = %+v", s.Partial)
	}
	for k, v := range tally {
		if s.Partial.ToolCalls[k] != v {
			t.Errorf("tally %s = %d, want %d (%v)", k, s.Partial.ToolCalls[k], v, s.Partial.ToolCalls)
		}
	}
}

func TestStepCeilingStopsWithPartial(t *testing.T) {
	e := newEnv(t, nil)
	s, err := e.r.Start(t.Context(), StartRequest{Task: "loop", Workspace: e.ws, MaxSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxSteps != 2 {
		t.Fatalf("max steps %d", s.MaxSteps)
	}
	run := e.nextRun()
	run.send(evText("trying"), evToolUse("a", "Bash", "ls"), evToolResult("a", false, intp(0)),
		evToolUse("b", "Write", filepath.Join(e.ws, "x")), evToolResult("b", false, nil),
		evToolUse("c", "Bash", "ls again"))
	got := e.settle(s.ID)
	if !run.isStopped() {
		t.Error("harness was not stopped")
	}
	if got.Status != StatusError || got.Nonce != "" || !strings.Contains(got.Error, "step ceiling of 2") {
		t.Fatalf("got %s %q nonce %q", got.Status, got.Error, got.Nonce)
	}
	assertPartial(t, got, map[string]int{"Bash": 2, "Write": 1})
	if got.Partial.Notes[0] != "trying" || got.Partial.FilesTouched[0] != filepath.Join(e.ws, "x") {
		t.Errorf("partial = %+v", got.Partial)
	}
}

func TestCeilingsStayWithinConfig(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSteps = 5; o.JobTimeout = time.Minute })
	s, err := e.r.Start(t.Context(), StartRequest{Task: "x", Workspace: e.ws, MaxSteps: 500, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxSteps != 5 || s.TimeoutMS != 60_000 {
		t.Errorf("ceilings %d steps %d ms", s.MaxSteps, s.TimeoutMS)
	}
	for _, bad := range []StartRequest{{Task: "", Workspace: e.ws}, {Task: "x", Workspace: e.ws, MaxSteps: -1}, {Task: "x", Workspace: e.ws, Timeout: -time.Second}} {
		if _, err := e.r.Start(t.Context(), bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("Start(%+v) = %v", bad, err)
		}
	}
}

func TestWallClockTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.JobTimeout = 30 * time.Minute })
		s := e.start("slow")
		run := <-e.h.runs
		run.send(evToolUse("a", "Bash", "sleep 9999"))
		begin := time.Now()
		got, err := e.r.Wait(t.Context(), s.ID, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusError || !strings.Contains(got.Error, "wall-clock ceiling of 30m0s") || got.Nonce != "" {
			t.Fatalf("got %s %q", got.Status, got.Error)
		}
		if d := time.Since(begin); d != 30*time.Minute {
			t.Errorf("stopped after %v", d)
		}
		if !run.isStopped() {
			t.Error("harness not stopped")
		}
		assertPartial(t, got, map[string]int{"Bash": 1})
		if err := e.r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		e := newEnv(t, nil)
		s := e.start("x")
		run := e.nextRun()
		run.send(evToolUse("a", "Bash", "sleep 100"))
		got, err := e.r.Cancel(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusCancelled || got.Nonce != "" || !run.isStopped() {
			t.Fatalf("got %s stopped=%v", got.Status, run.isStopped())
		}
		assertPartial(t, got, map[string]int{"Bash": 1})
		// A result arriving after the cancel does not make it done.
		if again, _ := e.r.Get(s.ID); again.Status != StatusCancelled {
			t.Errorf("status %s", again.Status)
		}
		if e.onDisk(s.ID).Status != StatusCancelled {
			t.Error("disk not cancelled")
		}
	})
	t.Run("queued never starts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxConcurrent = 1 })
			a := e.start("a")
			runA := e.nextRun()
			b := e.start("b")
			if b.Status != StatusQueued || b.QueuePosition != 1 {
				t.Fatalf("b = %s pos %d", b.Status, b.QueuePosition)
			}
			got, err := e.r.Cancel(t.Context(), b.ID)
			if err != nil || got.Status != StatusCancelled {
				t.Fatalf("cancel queued = %s %v", got.Status, err)
			}
			e.succeed(runA, a.ID)
			synctest.Wait() // whatever a's end started has reached the harness
			select {
			case r := <-e.h.runs:
				t.Fatalf("cancelled job started: %s", r.spec.JobID)
			default:
			}
		})
	})
	t.Run("finished is unchanged", func(t *testing.T) {
		e := newEnv(t, nil)
		s := e.start("x")
		run := e.nextRun()
		run.send(evResult("success", false, "ok"))
		run.end(harness.Exit{})
		done := e.settle(s.ID)
		got, err := e.r.Cancel(t.Context(), s.ID)
		if err != nil || got.Status != StatusDone || got.Nonce != done.Nonce {
			t.Fatalf("got %s %v", got.Status, err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		e := newEnv(t, nil)
		_, err := e.r.Cancel(t.Context(), strings.Repeat("a", 32))
		if !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "deepseek_agent_start") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestQueueFIFOWithPositionsAndBound(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConcurrent = 1; o.MaxQueue = 2 })
	a := e.start("a")
	runA := e.nextRun()
	b, c := e.start("b"), e.start("c")
	if b.QueuePosition != 1 || c.QueuePosition != 2 {
		t.Fatalf("positions %d %d", b.QueuePosition, c.QueuePosition)
	}
	_, err := e.r.Start(t.Context(), StartRequest{Task: "d", Workspace: e.ws})
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "BRIDGE_MAX_QUEUE=2") {
		t.Fatalf("4th start = %v", err)
	}
	runA.send(evResult("success", false, "a done"))
	runA.end(harness.Exit{})
	e.settle(a.ID)
	runB := e.nextRun()
	if runB.spec.JobID != b.ID {
		t.Fatalf("started %s, want b (FIFO)", runB.spec.JobID)
	}
	if got, _ := e.r.Get(c.ID); got.Status != StatusQueued || got.QueuePosition != 1 {
		t.Errorf("c = %s pos %d", got.Status, got.QueuePosition)
	}
	if got, _ := e.r.Get(b.ID); got.Status != StatusRunning || got.QueuePosition != 0 {
		t.Errorf("b = %s", got.Status)
	}
}

func TestClientHangUpDoesNotStopJob(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	s, err := e.r.Start(ctx, StartRequest{Task: "x", Workspace: e.ws})
	if err != nil {
		t.Fatal(err)
	}
	run := e.nextRun()
	waitCtx, waitCancel := context.WithCancel(ctx)
	go func() { _, _ = e.r.Wait(waitCtx, s.ID, time.Minute, nil) }()
	cancel() // the caller hangs up mid-wait
	waitCancel()
	run.send(evResult("success", false, "still done"))
	run.end(harness.Exit{})
	if got := e.settle(s.ID); got.Status != StatusDone || run.isStopped() {
		t.Fatalf("got %s stopped=%v", got.Status, run.isStopped())
	}
}

func TestAbortAndWaiting(t *testing.T) {
	e := newEnv(t, nil)
	s := e.start("x")
	run := e.nextRun()
	e.r.SetWaiting(s.ID, &ApprovalInfo{ID: "ap1", Summary: "Bash: rm -rf build"})
	got, _ := e.r.Get(s.ID)
	if got.Status != StatusWaitingApproval || got.Approval == nil || got.Approval.ID != "ap1" {
		t.Fatalf("waiting = %s %+v", got.Status, got.Approval)
	}
	if d := e.onDisk(s.ID); d.Status != StatusWaitingApproval {
		t.Errorf("disk %s", d.Status)
	}
	e.r.SetWaiting(s.ID, nil)
	if got, _ := e.r.Get(s.ID); got.Status != StatusRunning || got.Approval != nil {
		t.Fatalf("back = %s", got.Status)
	}
	e.r.Abort(s.ID, Stop{Reason: StopBudgetCeiling, Text: "the job's budget of $1.00 is spent"})
	got = e.settle(s.ID)
	if got.Status != StatusError || got.Error != "the job's budget of $1.00 is spent" || got.Nonce != "" || !run.isStopped() {
		t.Fatalf("aborted = %s %q", got.Status, got.Error)
	}
	assertPartial(t, got, nil)
}

func TestWaitReportsChangesAndReturnsOnSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		s := e.start("x")
		run := e.nextRun()
		changes := make(chan Snapshot, 64)
		res := make(chan Snapshot, 1)
		go func() {
			got, _ := e.r.Wait(t.Context(), s.ID, time.Minute, func(s Snapshot) { changes <- s })
			res <- got
		}()
		synctest.Wait() // the waiter is listening
		if c := <-changes; c.Steps != 0 || c.Status != StatusRunning {
			t.Fatalf("the state at the start of the wait = %d %s", c.Steps, c.Status)
		}
		run.send(evToolUse("0", "Grep", "TODO"))
		synctest.Wait()
		var c Snapshot
		select {
		case c = <-changes:
		default:
			t.Fatal("no change reported")
		}
		if c.Steps < 1 || c.LastTool != "Grep: TODO" || c.Status != StatusRunning {
			t.Errorf("change = %d %q %s", c.Steps, c.LastTool, c.Status)
		}
		run.send(evResult("success", false, "ok"))
		run.end(harness.Exit{})
		synctest.Wait()
		select {
		case got := <-res:
			if got.Status != StatusDone {
				t.Fatalf("got %s", got.Status)
			}
		default:
			t.Fatal("Wait did not return on settle")
		}
		// A wait on a running job returns at its deadline with the live state.
		s2 := e.start("y")
		e.nextRun()
		begin := time.Now()
		got, err := e.r.Wait(t.Context(), s2.ID, 20*time.Millisecond, nil)
		if err != nil || got.Status != StatusRunning || time.Since(begin) != 20*time.Millisecond {
			t.Fatalf("wait = %s %v after %v", got.Status, err, time.Since(begin))
		}
	})
}

func TestLiveTraceIsOnDiskWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.TraceInterval = time.Second; o.MaxSteps = 1000 })
		s := e.start("x")
		run := <-e.h.runs
		for i := range 50 {
			id := string(rune('a' + i%26))
			run.send(evToolUse(id, "Bash", "echo "+id), evToolResult(id, false, intp(0)))
		}
		time.Sleep(2 * time.Second) // fake time: past the throttle interval
		synctest.Wait()
		disk := e.onDisk(s.ID)
		if disk.Status != StatusRunning || disk.Steps != 50 || len(disk.Trace) < 100 {
			t.Fatalf("disk = %s steps %d trace %d", disk.Status, disk.Steps, len(disk.Trace))
		}
		run.end(harness.Exit{Code: 1})
		e.r.Wait(t.Context(), s.ID, time.Minute, nil)
		e.r.Close(context.Background())
	})
}

func TestTraceIsBounded(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSteps = 10_000 })
	s := e.start("x")
	run := e.nextRun()
	for i := range MaxTrace {
		id := "t" + string(rune('0'+i%10))
		run.send(evToolUse(id, "Read", "f"), evToolResult(id, false, nil))
	}
	run.end(harness.Exit{Code: 1})
	got := e.settle(s.ID)
	if len(got.Trace) != MaxTrace || got.TraceDropped < MaxTrace {
		t.Fatalf("trace %d dropped %d", len(got.Trace), got.TraceDropped)
	}
}

func TestTTLSweepsMemoryAndDisk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.JobTimeout = time.Minute; o.ResultTTL = 10 * time.Minute })
		s := e.start("x")
		run := <-e.h.runs
		if err := os.MkdirAll(e.dir.HarnessDir(s.ID), 0o700); err != nil {
			t.Fatal(err)
		}
		run.send(evResult("success", false, "ok"))
		run.end(harness.Exit{})
		if got, _ := e.r.Wait(t.Context(), s.ID, time.Minute, nil); got.Status != StatusDone {
			t.Fatalf("got %s", got.Status)
		}
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if _, err := e.r.Get(s.ID); err != nil {
			t.Fatalf("swept before TTL: %v", err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := e.r.Get(s.ID); !errors.Is(err, ErrUnknownJob) {
			t.Fatalf("still pollable after TTL: %v", err)
		}
		for _, p := range []string{e.dir.JobFile(s.ID), e.dir.HarnessDir(s.ID)} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s not removed: %v", p, err)
			}
		}
		e.r.Close(context.Background())
	})
}

func TestResultTTLNeverBelowTimeout(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.JobTimeout = time.Hour; o.ResultTTL = time.Minute })
	if e.r.opts.ResultTTL != time.Hour {
		t.Fatalf("ttl = %v", e.r.opts.ResultTTL)
	}
}

func TestShutdownInterruptsEverything(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConcurrent = 1 })
	a := e.start("a")
	run := e.nextRun()
	run.send(evToolUse("x", "Bash", "make"))
	b := e.start("b")
	if err := e.r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !run.isStopped() {
		t.Error("harness not stopped on shutdown")
	}
	for _, id := range []string{a.ID, b.ID} {
		got, _ := e.r.Get(id)
		disk := e.onDisk(id)
		if got.Status != StatusInterrupted || disk.Status != StatusInterrupted || disk.Nonce != "" {
			t.Errorf("%s: mem %s disk %s", id, got.Status, disk.Status)
		}
	}
	if _, err := e.r.Start(t.Context(), StartRequest{Task: "c", Workspace: e.ws}); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close = %v", err)
	}
}

func TestRestartReloadsSnapshots(t *testing.T) {
	synctest.Test(t, testRestartReloadsSnapshots)
}

func testRestartReloadsSnapshots(t *testing.T) {
	e := newEnv(t, nil)
	done := e.start("finished one")
	run := e.nextRun()
	run.send(evResult("success", false, "ok"))
	run.end(harness.Exit{})
	doneSnap := e.settle(done.ID)

	live := e.start("running one")
	liveRun := e.nextRun()
	liveRun.send(evText("halfway"), evToolUse("w", "Write", filepath.Join(e.ws, "half.txt")), evToolResult("w", false, nil))
	// Let the throttled trace write happen (fake time), then simulate a crash:
	// the snapshot on disk still says running.
	time.Sleep(2 * e.opts.TraceInterval)
	synctest.Wait()
	crashed := e.onDisk(live.ID)
	if crashed.Status != StatusRunning || crashed.Steps != 1 {
		t.Fatalf("disk = %s steps %d", crashed.Status, crashed.Steps)
	}

	// An expired one and an orphan harness dir are cleaned at start.
	old := time.Now().Add(-time.Hour)
	expired := Snapshot{Version: 1, ID: strings.Repeat("e", 32), Status: StatusDone, CreatedAt: old, EndedAt: &old, ExpiresAt: &old, Nonce: strings.Repeat("1", 32), Result: "r"}
	writeSnap(t, e, expired)
	os.MkdirAll(e.dir.HarnessDir(expired.ID), 0o700)
	orphan := e.dir.HarnessDir(strings.Repeat("f", 32))
	os.MkdirAll(orphan, 0o700)
	os.WriteFile(filepath.Join(e.dir.Jobs(), "garbage.json"), []byte("{"), 0o600)

	// Restart on the same state dir: a second registry, as a new daemon would.
	e2 := &env{t: t, dir: e.dir, ws: e.ws, h: newFakeHarness(), opts: e.opts}
	e2.opts.Harness = e2.h
	r2 := e2.open()

	got, err := r2.Get(live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusInterrupted || got.Nonce != "" || got.Result != "" || !strings.Contains(got.Error, "bridge stopped") {
		t.Fatalf("reloaded live = %s %q", got.Status, got.Error)
	}
	if got.Steps != 1 || len(got.Trace) < 2 || got.Partial == nil || got.Partial.Notes[0] != "halfway" {
		t.Errorf("partial trace lost: steps %d trace %d partial %+v", got.Steps, len(got.Trace), got.Partial)
	}
	raw, err := os.ReadFile(e.dir.JobFile(live.ID))
	if err != nil || !json.Valid(raw) {
		t.Fatalf("snapshot not valid JSON: %v", err)
	}
	if e2.onDisk(live.ID).Status != StatusInterrupted {
		t.Error("interrupted state not written back")
	}
	d, err := r2.Get(done.ID)
	if err != nil || d.Status != StatusDone || d.Nonce != doneSnap.Nonce {
		t.Errorf("finished job lost across restart: %v %s", err, d.Status)
	}
	if _, err := r2.Get(expired.ID); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("expired job reloaded")
	}
	for _, p := range []string{e.dir.JobFile(expired.ID), e.dir.HarnessDir(expired.ID), orphan} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned", p)
		}
	}
	liveRun.end(harness.Exit{Code: -1})
}

func writeSnap(t *testing.T, e *env, s Snapshot) {
	t.Helper()
	b, _ := json.Marshal(s)
	if err := os.WriteFile(e.dir.JobFile(s.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestHarnessStartFailureIsError(t *testing.T) {
	e := newEnv(t, nil)
	e.h.startErr = harness.ErrNoBinary
	s := e.start("x")
	got := e.settle(s.ID)
	if got.Status != StatusError || !strings.Contains(got.Error, "BRIDGE_CLAUDE_BIN") {
		t.Fatalf("got %s %q", got.Status, got.Error)
	}
}

type countingGateway struct {
	opened, closed []string
	usage          Usage
	err            error
}

func (g *countingGateway) Open(id string) (string, string, error) {
	g.opened = append(g.opened, id)
	return "http://127.0.0.1:2", "per-job-token-" + id[:4], g.err
}

func (g *countingGateway) Revoke(id string) {}

func (g *countingGateway) Close(id string) (Metered, error) {
	g.closed = append(g.closed, id)
	return Metered{Usage: g.usage, CostUSD: 0.5}, nil
}

func TestGatewayTokenAndUsage(t *testing.T) {
	g := &countingGateway{usage: Usage{InputTokens: 7, OutputTokens: 3}}
	e := newEnv(t, func(o *Options) { o.Gateway = g })
	s := e.start("x")
	run := e.nextRun()
	if run.spec.Token != "per-job-token-"+s.ID[:4] || run.spec.BaseURL != "http://127.0.0.1:2" {
		t.Fatalf("spec token %q url %q", run.spec.Token, run.spec.BaseURL)
	}
	run.send(evResult("success", false, "ok"))
	run.end(harness.Exit{})
	got := e.settle(s.ID)
	if got.Usage != g.usage || got.CostUSD != 0.5 || len(g.closed) != 1 {
		t.Fatalf("usage %+v closed %v", got.Usage, g.closed)
	}
}

func TestIDsAndNoncesAreUnguessable(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConcurrent = 4; o.MaxQueue = 0 })
	seen := map[string]bool{}
	for range 4 {
		s := e.start("x")
		run := e.nextRun()
		run.send(evResult("success", false, "ok"))
		run.end(harness.Exit{})
		got := e.settle(s.ID)
		for _, v := range []string{got.ID, got.Nonce} {
			if !hex32.MatchString(v) || seen[v] { // 128 bits from crypto/rand
				t.Fatalf("weak or repeated value %q", v)
			}
			seen[v] = true
		}
	}
}

func TestLoadRefusesUnknownVersionAndBadIDs(t *testing.T) {
	e := newEnv(t, nil)
	id := strings.Repeat("b", 32)
	writeSnap(t, e, Snapshot{Version: 99, ID: id, Status: StatusDone})
	if _, err := Load(e.dir, id); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("Load = %v", err)
	}
	for _, bad := range []string{"../../etc/passwd", "ABC", "", strings.Repeat("a", 33)} {
		if _, err := Load(e.dir, bad); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("Load(%q) = %v", bad, err)
		}
	}
	snaps, errs := LoadAll(e.dir)
	if len(snaps) != 0 || len(errs) != 1 {
		t.Errorf("LoadAll = %d snaps, errs %v", len(snaps), errs)
	}
}

func TestWaitEndedByCallerReturnsCurrentState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		s := e.start("x")
		<-e.h.runs
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		got := make(chan Snapshot, 1)
		go func() {
			snap, _ := e.r.Wait(ctx, s.ID, time.Minute, func(c Snapshot) {
				if c.Status == StatusWaitingApproval {
					cancel() // a caller that stops waiting once a human is needed
				}
			})
			got <- snap
		}()
		synctest.Wait() // the waiter is parked
		begin := time.Now()
		e.r.SetWaiting(s.ID, &ApprovalInfo{ID: "a1", Summary: "Bash: make"})
		snap := <-got
		if snap.Status != StatusWaitingApproval || snap.Approval.ID != "a1" || time.Since(begin) != 0 {
			t.Fatalf("wait returned %s after %v", snap.Status, time.Since(begin))
		}
		e.r.Close(context.Background())
	})
}

func TestCancelBeforeHarnessStartsNeverStartsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		e := newEnv(t, func(o *Options) {
			o.Guard = prepareGuard{o.Guard.(rootGuard), func(ctx context.Context, spec *harness.Spec) error {
				spec.SettingsFile = "/x/settings.json"
				close(entered)
				<-release
				return nil
			}}
		})
		s := e.start("x")
		<-entered
		got := make(chan Snapshot, 1)
		go func() { c, _ := e.r.Cancel(context.Background(), s.ID); got <- c }()
		synctest.Wait() // Cancel has marked the job and waits for its end
		e.r.mu.Lock()
		marked := e.r.jobs[s.ID].stop != nil
		e.r.mu.Unlock()
		if !marked {
			t.Fatal("Cancel waits for the end without marking the job")
		}
		close(release)
		if c := <-got; c.Status != StatusCancelled || c.Nonce != "" {
			t.Fatalf("got %s", c.Status)
		}
		select {
		case r := <-e.h.runs:
			t.Fatalf("harness started for a cancelled job: %+v", r.spec)
		default:
		}
	})
}

package jobs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/fulldisk"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// newFullEnv is newEnv with the state dir on a small tmpfs the test fills.
func newFullEnv(t *testing.T, log *syncbuf.Buffer) (*env, *fulldisk.FS) {
	t.Helper()
	fs := fulldisk.Mount(t, 1<<20)
	dir, err := statedir.Open(filepath.Join(fs.Dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *Options) {
		o.Dir = dir
		l := zerolog.New(log)
		o.Logger = &l
	})
	e.dir = dir
	return e, fs
}

// A job that ends while the state dir is full keeps its true end in
// memory, and once space returns the retried write puts it on disk, where a
// restart finds it: never "running", never "interrupted".
func TestFullDiskJobEndLandsOnceSpaceReturns(t *testing.T) {
	var log syncbuf.Buffer
	e, fs := newFullEnv(t, &log)
	s, err := e.r.Start(t.Context(), StartRequest{Task: "loop", Workspace: e.ws, MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	run := e.nextRun()
	run.send(evToolUse("a", "Bash", "ls"), evToolResult("a", false, intp(0)))
	if !poll.Until(10*time.Second, func() bool { d, err := Load(e.dir, s.ID); return err == nil && d.Steps == 1 }) {
		t.Fatal("the first step never reached the disk")
	}

	fs.Fill()
	run.send(evToolUse("b", "Bash", "ls -l"), evToolResult("b", false, intp(0)),
		evToolUse("c", "Bash", "ls -la"), evToolResult("c", false, intp(0)),
		evToolUse("d", "Bash", "ls again"))
	got := e.settle(s.ID)
	if got.Status != StatusError || !strings.Contains(got.Error, "step ceiling of 3") {
		t.Fatalf("in memory: %s %q, want the step ceiling", got.Status, got.Error)
	}
	if disk := e.onDisk(s.ID); disk.Status != StatusRunning {
		t.Fatalf("on a full disk the snapshot changed to %s: the test did not fill it", disk.Status)
	}
	// A poll tells the truth meanwhile.
	if now, err := e.r.Get(s.ID); err != nil || now.Status != StatusError || now.Steps != 4 {
		t.Fatalf("Get during the full disk = %s %d steps, %v", now.Status, now.Steps, err)
	}
	if !strings.Contains(log.String(), "snapshot write failed: retrying until it lands") {
		t.Errorf("the log does not say the write failed:\n%s", log.String())
	}

	fs.Free()
	var disk Snapshot
	if !poll.Until(10*time.Second, func() bool { disk, err = Load(e.dir, s.ID); return err == nil && disk.Status.Final() }) {
		t.Fatalf("the end never reached the disk once space returned: %s %v", disk.Status, err)
	}
	if disk.Status != StatusError || disk.Error != got.Error || disk.Steps != 4 || disk.EndedAt == nil {
		t.Fatalf("on disk: %s %q %d steps, want the true end %q", disk.Status, disk.Error, disk.Steps, got.Error)
	}
	if !strings.Contains(log.String(), "snapshot written after its write had failed") {
		t.Errorf("the log does not say the write landed:\n%s", log.String())
	}

	// Restart: a second registry on the same state dir, as a new daemon.
	if err := e.r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, dir: e.dir, ws: e.ws, h: newFakeHarness(), opts: e.opts}
	e2.opts.Harness = e2.h
	r2 := e2.open()
	again, err := r2.Get(s.ID)
	if err != nil || again.Status != StatusError || again.Error != got.Error {
		t.Fatalf("after a restart: %s %q, %v; want the recorded end", again.Status, again.Error, err)
	}
}

// Close waits for a retried write only as long as its ctx: then it says
// which job's state never reached the disk instead of hanging.
func TestCloseGivesUpOnWritesThatNeverLand(t *testing.T) {
	var log syncbuf.Buffer
	e, fs := newFullEnv(t, &log)
	s := e.start("quick")
	run := e.nextRun()
	// The running snapshot first, then a disk that stays full: a page freed
	// meanwhile is taken again, so the final write never lands.
	if !poll.Until(time.Minute, func() bool {
		d, err := Load(e.dir, s.ID)
		return err == nil && d.Status == StatusRunning && d.HarnessPID != 0
	}) {
		t.Fatal("the running snapshot never reached the disk")
	}
	fs.KeepFull()
	got := e.succeed(run, s.ID)
	if got.Status != StatusDone {
		t.Fatalf("in memory %s", got.Status)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := e.r.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "the snapshots of 1 jobs could not be written") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v", err)
	}
	if !strings.Contains(log.String(), "snapshot never written before shutdown") || !strings.Contains(log.String(), s.ID) {
		t.Errorf("the log does not name the lost state:\n%s", log.String())
	}
	fs.Free()
}

// A snapshot cut short is kept as it is; a poll of its job says its record
// is damaged and what is still known, not that it never existed.
func TestDamagedSnapshotPollsAsDamaged(t *testing.T) {
	e := newEnv(t, nil)
	id := strings.Repeat("d", 32)
	whole := `{"version":1,"id":"` + id + `","status":"running","task":"fix the build","workspace":"/w","created_at":"2026-05-01T10:00:00Z","max_steps":50,"timeout_ms":1000,"steps":33,"last_tool":"Bash: make","usage":{"input_tok`
	if err := os.WriteFile(e.dir.JobFile(id), []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.dir.HarnessDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, dir: e.dir, ws: e.ws, h: newFakeHarness(), opts: e.opts}
	r2 := e2.open()
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := r2.Get(id); return err },
		"Wait":   func() error { _, err := r2.Wait(t.Context(), id, time.Second, nil); return err },
		"Cancel": func() error { _, err := r2.Cancel(t.Context(), id); return err },
	} {
		err := call()
		if !errors.Is(err, ErrDamagedJob) || errors.Is(err, ErrUnknownJob) {
			t.Fatalf("%s = %v, want ErrDamagedJob", name, err)
		}
		for _, want := range []string{"is damaged", "still known: status running; 33 steps; created 2026-05-01T10:00:00Z; task: fix the build", "do not assume it succeeded"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", name, err, want)
			}
		}
	}
	if b, _ := os.ReadFile(e.dir.JobFile(id)); string(b) != whole {
		t.Error("the damaged snapshot was changed")
	}
	if _, err := os.Stat(e.dir.HarnessDir(id)); err != nil {
		t.Errorf("its harness dir was removed: %v", err)
	}
}

// A snapshot in a status this build does not know keeps its result and
// nonce: it is set aside unchanged, and polls say where it went.
func TestUnknownStatusIsSetAside(t *testing.T) {
	e := newEnv(t, nil)
	id := strings.Repeat("c", 32)
	body := []byte(`{"version":1,"id":"` + id + `","status":"archived","task":"t","workspace":"/w","created_at":"2026-05-01T10:00:00Z","nonce":"` + strings.Repeat("9", 32) + `","result":"the answer","files_written":[],"commands":[]}`)
	if err := os.WriteFile(e.dir.JobFile(id), body, 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.dir.HarnessDir(id), 0o700)
	e2 := &env{t: t, dir: e.dir, ws: e.ws, h: newFakeHarness(), opts: e.opts}
	r2 := e2.open()
	aside := filepath.Join(SetAsideDir(e.dir), id+".json")
	if b, err := os.ReadFile(aside); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("set-aside file = %q, %v; want the snapshot unchanged", b, err)
	}
	if _, err := os.Stat(e.dir.JobFile(id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot is still in jobs/: %v", err)
	}
	_, err := r2.Get(id)
	if !errors.Is(err, ErrDamagedJob) || !strings.Contains(err.Error(), `status "archived"`) || !strings.Contains(err.Error(), aside) {
		t.Fatalf("Get = %v", err)
	}
	if _, err := os.Stat(e.dir.HarnessDir(id)); err != nil {
		t.Errorf("its harness dir was removed: %v", err)
	}
	if snaps, errs := LoadAll(e.dir); len(snaps) != 0 || len(errs) != 0 {
		t.Errorf("LoadAll reads the set-aside dir: %v %v", snaps, errs)
	}
}

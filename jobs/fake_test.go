package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// fakeHarness hands every started run to the test through runs.
type fakeHarness struct {
	runs     chan *fakeRun
	startErr error
	linger   bool // a stopped run ends only when the test ends it (a slow harness)
}

var _ harness.Harness = (*fakeHarness)(nil)

func newFakeHarness() *fakeHarness { return &fakeHarness{runs: make(chan *fakeRun, 16)} }

func (h *fakeHarness) Start(ctx context.Context, spec harness.Spec) (harness.Run, error) {
	if h.startErr != nil {
		return nil, h.startErr
	}
	r := &fakeRun{spec: spec, events: make(chan harness.Event, 256), stopped: make(chan struct{}), ended: make(chan struct{}), linger: h.linger}
	h.runs <- r
	return r, nil
}

// fakeRun is driven by the test: send events, then end (or get stopped).
type fakeRun struct {
	spec    harness.Spec
	events  chan harness.Event
	stopped chan struct{}
	ended   chan struct{}
	linger  bool

	mu       sync.Mutex
	closed   bool
	stopOnce sync.Once
	exit     harness.Exit
}

func (r *fakeRun) Events() <-chan harness.Event { return r.events }
func (r *fakeRun) PID() int                     { return 4242 }

func (r *fakeRun) Stop() {
	r.stopOnce.Do(func() {
		close(r.stopped)
		if !r.linger {
			r.end(harness.Exit{Code: -1, Signal: "terminated", Stopped: true})
		}
	})
}

func (r *fakeRun) Wait() harness.Exit {
	<-r.ended
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exit
}

func (r *fakeRun) send(evs ...harness.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		r.events <- ev
	}
}

func (r *fakeRun) end(exit harness.Exit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.exit = exit
	close(r.events)
	close(r.ended)
}

func (r *fakeRun) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// Event builders.
func evToolUse(id, name, detail string) harness.Event {
	tu := &harness.ToolUse{ID: id, Name: name, Detail: detail}
	switch name {
	case "Bash":
		tu.Command = detail
	case "Write", "Edit":
		tu.Path = detail
	}
	return harness.Event{Kind: harness.KindToolUse, ToolUse: tu}
}

func evToolResult(id string, isErr bool, code *int) harness.Event {
	return harness.Event{Kind: harness.KindToolResult, ToolResult: &harness.ToolResult{ToolUseID: id, IsError: isErr, ExitCode: code, Text: "out"}}
}

func evText(s string) harness.Event { return harness.Event{Kind: harness.KindText, Text: s} }

func evResult(subtype string, isErr bool, text string) harness.Event {
	return harness.Event{Kind: harness.KindResult, Result: &harness.Result{
		Subtype: subtype, IsError: isErr, Text: text, NumTurns: 3, SessionID: "sess",
		Usage: harness.Usage{InputTokens: 1000, CacheCreationTokens: 0, CacheReadTokens: 4000, OutputTokens: 500, ThinkingTokens: 100},
	}}
}

func intp(n int) *int { return &n }

type env struct {
	t     *testing.T
	dir   statedir.Dir
	root  string // an allowed root
	ws    string // a workspace inside it
	h     *fakeHarness
	r     *Registry
	opts  Options
	state string
}

// newEnv builds a registry on a fresh state dir with one allowed root.
func newEnv(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	base := t.TempDir()
	dir, err := statedir.Open(filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, root: root, ws: ws, h: newFakeHarness()}
	e.opts = Options{
		Dir: dir, Harness: e.h, Gateway: DirectGateway{BaseURL: "http://127.0.0.1:1/anthropic", Key: "sk-test-double-key"},
		Guard: rootGuard{roots: []string{root}, state: dir.Root}, Model: "deepseek-flash", MaxConcurrent: 2, MaxQueue: 2, MaxSteps: 10,
		JobTimeout: time.Hour, ResultTTL: 2 * time.Hour, TraceInterval: 50 * time.Millisecond,
	}
	if mod != nil {
		mod(&e.opts)
	}
	e.r = e.open()
	return e
}

func (e *env) open() *Registry {
	e.t.Helper()
	r, err := New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

func (e *env) start(task string) Snapshot {
	e.t.Helper()
	s, err := e.r.Start(e.t.Context(), StartRequest{Task: task, Workspace: e.ws})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) nextRun() *fakeRun {
	e.t.Helper()
	select {
	case r := <-e.h.runs:
		return r
	case <-time.After(10 * time.Second):
		e.t.Fatal("no harness run started")
		return nil
	}
}

// settle waits for the job to be final.
func (e *env) settle(id string) Snapshot {
	e.t.Helper()
	s, err := e.r.Wait(e.t.Context(), id, 10*time.Second, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if !s.Status.Final() {
		e.t.Fatalf("job %s still %s", id, s.Status)
	}
	return s
}

// succeed ends run with a successful result and waits for job id to settle.
func (e *env) succeed(run *fakeRun, id string) Snapshot {
	e.t.Helper()
	run.send(evResult("success", false, "ok"))
	run.end(harness.Exit{})
	return e.settle(id)
}

func (e *env) onDisk(id string) Snapshot {
	e.t.Helper()
	s, err := Load(e.dir, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

var errBoom = errors.New("boom")

// DirectGateway points every harness straight at BaseURL with Key. It lives
// in the tests only: handing a harness the shared key is what the per-job
// model proxy exists to prevent.
type DirectGateway struct{ BaseURL, Key string }

var _ ModelGateway = DirectGateway{}

// Open returns the configured endpoint and key.
func (g DirectGateway) Open(string) (string, string, error) {
	if g.BaseURL == "" {
		return "", "", errors.New("no Anthropic base URL: set BRIDGE_ANTHROPIC_BASE_URL or DEEPSEEK_BASE_URL")
	}
	return g.BaseURL, g.Key, nil
}

// Revoke cannot revoke a shared key; the harness is stopped instead.
func (g DirectGateway) Revoke(string) {}

// Close knows no usage; the harness's own result line supplies it.
func (g DirectGateway) Close(string) (Metered, error) { return Metered{}, nil }

// rootGuard admits workspaces under roots, never the state dir, and
// prepares nothing: the daemon's guard without its approval and sandbox files.
type rootGuard struct {
	roots []string
	state string
}

func (g rootGuard) Admit(dir string) (string, error) {
	ws, err := sandbox.AdmitWorkspace(g.roots, dir, g.state)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrWorkspace, err)
	}
	return ws, nil
}

func (rootGuard) Prepare(context.Context, *harness.Spec) error { return nil }

func (rootGuard) Audit(context.Context, string, string) sandbox.AuditResult {
	return sandbox.AuditResult{}
}

func (rootGuard) Changes(context.Context, string, string) (changes.Report, error) {
	return changes.Report{}, errors.New("no record")
}

// prepareGuard is a rootGuard whose Prepare runs prepare.
type prepareGuard struct {
	rootGuard
	prepare func(context.Context, *harness.Spec) error
}

func (g prepareGuard) Prepare(ctx context.Context, spec *harness.Spec) error {
	return g.prepare(ctx, spec)
}

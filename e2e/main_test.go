package e2e

// The helpers every e2e test builds on. Keep this API small and documented:
// the agent tests (agent_*_test.go) use it too.
//
//	binary(t, name) string                      path of a binary built once per run
//	startDouble(t) *deepseektest.Server         the DeepSeek double, closed in t.Cleanup
//	doubleEnv(d) map[string]string              DEEPSEEK_BASE_URL + DEEPSEEK_API_KEY for the bridge
//	startBridge(t, env) *bridgeProc             `bridge serve` as a real process
//	startBridgeBin(t, bin, env) *bridgeProc     the same with another build (e.g. the conformance one)
//	goSDKClient(t, url) *mcp.ClientSession      official Go SDK client, closed in t.Cleanup
//	goSDKClientWith(t, url, opts)               the same with client options (handlers)
//	newProgressLog() *progressLog               records progress notifications for a client (WaitFor)
//	assertNotInFiles(t, files, needles...)      no file holds any needle (run for every bridge's logs at cleanup)
//	mergeEnv(maps...) map[string]string         later maps win

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Obviously fake credentials; nothing real is ever written by these tests.
const (
	testSecret = "test-secret-0123456789abcdef"
)

// Limits of the harness itself, so a broken bridge fails a test instead of hanging it.
const (
	startTimeout = 30 * time.Second // process start → daemon.json + /health 200
	stopGrace    = 15 * time.Second // SIGTERM → exit
	buildTimeout = 5 * time.Minute
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests isolates the process (testenv), runs the tests, and checks that no
// job process outlived the run.
func runTests(m *testing.M) int {
	cleanup, err := testenv.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 2
	}
	defer cleanup()
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short (every test runs the real bridge binary)")
		return 0
	}
	code := m.Run()
	if !checkNoLeftoverJobProcesses() && code == 0 { // suite-wide: no job process outlives the run
		code = 1
	}
	return code
}

// binaries names every binary the tests may ask for: its package and build tags.
var binaries = map[string]struct{ pkg, tags string }{
	"bridge":             {"./cmd/bridge", ""},
	"bridge-conformance": {"./cmd/bridge", "conformance"},
	"bridgectl":          {"./cmd/bridgectl", ""},
	"deepseek-double":    {"./cmd/deepseek-double", ""},
	"bridge-demo":        {"./cmd/bridge-demo", ""},
}

// binary returns the path of the named binary (a key of binaries), built
// once per run and standing beside the others under its own name
// (testenv.Installed): bridge finds bridgectl next to itself, and
// bridge-demo takes their dir as --bin-dir. E2E_RACE=1 builds with -race.
func binary(t testing.TB, name string) string {
	t.Helper()
	spec, ok := binaries[name]
	if !ok {
		t.Fatalf("binary %q: not in e2e.binaries", name)
	}
	return testenv.Installed(t, name, spec.pkg, testenv.Build{Tags: spec.tags, Race: os.Getenv("E2E_RACE") == "1"})
}

// moduleRoot is the directory holding go.mod (the parent of e2e/).
func moduleRoot(t testing.TB) string { t.Helper(); return testenv.ModuleRoot(t) }

// startDouble starts the in-process DeepSeek double; it is closed in t.Cleanup.
func startDouble(t testing.TB) *deepseektest.Server {
	t.Helper()
	d := deepseektest.New()
	t.Cleanup(d.Close)
	return d
}

// doubleEnv points the bridge at the double: DEEPSEEK_BASE_URL and DEEPSEEK_API_KEY
// (the harness's Anthropic endpoint defaults to DEEPSEEK_BASE_URL/anthropic).
func doubleEnv(d *deepseektest.Server) map[string]string {
	return map[string]string{
		"DEEPSEEK_BASE_URL": d.URL(),
		"DEEPSEEK_API_KEY":  d.Key(),
	}
}

// mergeEnv returns one map holding every entry of ms; later maps win.
func mergeEnv(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// inheritedEnv is the allow-list of variables the bridge child inherits from
// the test process; everything else it gets comes from startBridge's env.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "GOCOVERDIR"}

// bridgeProc is one `bridge serve` child process (and its restarts). It runs in
// its own process group; t.Cleanup stops it with SIGTERM and fails the test if
// it does not exit cleanly within stopGrace, leaves a process of its group, or
// had exited on its own (a crash) without Stop or Kill9.
type bridgeProc struct {
	t        testing.TB
	bin      string
	env      map[string]string // full child env (inherited allow-list + defaults + caller's)
	workDir  string            // cwd of the child: empty, so no stray .env is read
	stateDir string
	logDir   string // stdout/stderr captures, one file per start

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed once cmd.Wait returned
	waitErr  error
	stopping bool // Stop or Kill9 was called for the current process
	addr     string
	starts   int
	outputs  []string // capture files, in start order
}

// startBridge starts `bridge serve` with: HOST=127.0.0.1, PORT=0, a temp
// BRIDGE_STATE_DIR, BRIDGE_LOG_FILE=<state>/bridge.log, BRIDGE_LOG_LEVEL=debug,
// MCP_PATH_SECRET=testSecret, RATE_LIMIT_PER_MINUTE=6000 (so polling tests
// never trip the limit; the rate-limit tests set their own, and "" means the
// built-in default of 60), then env on top. It returns once daemon.json names
// the address and GET /health answered 200.
func startBridge(t testing.TB, env map[string]string) *bridgeProc {
	t.Helper()
	return startBridgeBin(t, binary(t, "bridge"), env)
}

// startBridgeBin is startBridge with a given binary (e.g. binary(t, "bridge-conformance")).
func startBridgeBin(t testing.TB, bin string, env map[string]string) *bridgeProc {
	t.Helper()
	base := t.TempDir()
	p := &bridgeProc{
		t:        t,
		bin:      bin,
		workDir:  filepath.Join(base, "cwd"),
		stateDir: filepath.Join(base, "state"),
		logDir:   filepath.Join(base, "out"),
	}
	for _, d := range []string{p.workDir, p.logDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	inherited := map[string]string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			inherited[k] = v
		}
	}
	if env["BRIDGE_STATE_DIR"] != "" {
		p.stateDir = env["BRIDGE_STATE_DIR"]
	}
	p.env = mergeEnv(inherited, map[string]string{
		"HOST":                  "127.0.0.1",
		"PORT":                  "0",
		"MCP_PATH_SECRET":       testSecret,
		"BRIDGE_STATE_DIR":      p.stateDir,
		"BRIDGE_LOG_FILE":       filepath.Join(p.stateDir, "bridge.log"),
		"BRIDGE_LOG_LEVEL":      "debug",
		"RATE_LIMIT_PER_MINUTE": "6000",
		// Tests read whole payloads: no host budget leaves parts out
		// (TestPayloadFitsItsHost runs with the default, "").
		"BRIDGE_RESULT_BUDGET": "16777216",
		// A config home of its own: the per-user .env of whoever runs the
		// tests is never read.
		"XDG_CONFIG_HOME": filepath.Join(base, "config"),
	}, env)
	t.Cleanup(func() {
		p.mu.Lock()
		started, stopping := p.cmd != nil, p.stopping
		p.mu.Unlock()
		switch {
		case p.running():
			if code := p.Stop(); code != 0 {
				t.Errorf("bridge exited with status %d after SIGTERM; output:\n%s", code, p.LogBytes())
			}
		case started && !stopping:
			t.Errorf("bridge exited on its own during the test (%v); output:\n%s", p.exitErr(), p.LogBytes())
		}
		// The invariant every e2e test checks for free: no log line holds the
		// path secret or the API key.
		assertNotInFiles(t, p.LogFiles(), p.env["MCP_PATH_SECRET"], p.env["DEEPSEEK_API_KEY"])
	})
	p.start()
	return p
}

func (p *bridgeProc) start() {
	t := p.t
	t.Helper()
	info := filepath.Join(p.stateDir, "daemon.json")
	if err := os.Remove(info); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.starts++
	outPath := filepath.Join(p.logDir, fmt.Sprintf("run%d.out", p.starts))
	p.mu.Unlock()
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.bin, "serve")
	cmd.Dir = p.workDir
	for k, v := range p.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	out.Close() // the child holds its own descriptor
	if err != nil {
		t.Fatalf("start bridge: %v", err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.addr, p.stopping = cmd, done, "", false
	p.outputs = append(p.outputs, outPath)
	p.mu.Unlock()
	go func() { // owner: p; joined by Stop/Kill9 via done
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()

	addr, err := p.waitListening(info, cmd.Process.Pid, done)
	if err != nil {
		p.Kill9()
		t.Fatalf("bridge did not come up: %v\noutput:\n%s", err, p.LogBytes())
	}
	p.mu.Lock()
	p.addr = addr
	p.mu.Unlock()
}

// waitListening polls daemon.json (written by the bridge once it listens) and
// then /health. It gives up early if the process exits.
func (p *bridgeProc) waitListening(info string, pid int, done <-chan struct{}) (string, error) {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: 2 * time.Second}
	addr := ""
	for {
		select {
		case <-done:
			return "", fmt.Errorf("process exited early: %v", p.exitErr())
		case <-deadline.C:
			return "", fmt.Errorf("no daemon.json with a healthy address after %v (addr %q)", startTimeout, addr)
		case <-tick.C:
		}
		if addr == "" {
			b, err := os.ReadFile(info)
			if err != nil {
				continue
			}
			var di statedir.DaemonInfo
			if err := json.Unmarshal(b, &di); err != nil || di.Addr == "" {
				continue // half-written files cannot happen (atomic writes), but be lenient
			}
			if di.PID != 0 && di.PID != pid {
				return "", fmt.Errorf("daemon.json names pid %d, the child is %d", di.PID, pid)
			}
			addr = di.Addr
		}
		resp, err := client.Get("http://" + addr + "/health")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return addr, nil
		}
	}
}

func (p *bridgeProc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (p *bridgeProc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Addr is HOST:PORT the bridge listens on.
func (p *bridgeProc) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// BaseURL is http://HOST:PORT.
func (p *bridgeProc) BaseURL() string { return "http://" + p.Addr() }

// URL is the MCP endpoint with the capability secret.
func (p *bridgeProc) URL() string { return p.BaseURL() + "/mcp/" + p.Secret() }

// Secret is MCP_PATH_SECRET of this bridge.
func (p *bridgeProc) Secret() string { return p.env["MCP_PATH_SECRET"] }

// StateDir is BRIDGE_STATE_DIR of this bridge.
func (p *bridgeProc) StateDir() string { return p.stateDir }

// Env is a copy of the child's environment.
func (p *bridgeProc) Env() map[string]string { return mergeEnv(p.env) }

// PID is the current process id (0 when never started).
func (p *bridgeProc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// LogFiles lists every file the bridge logged to: the stdout/stderr capture of
// each start and BRIDGE_LOG_FILE.
func (p *bridgeProc) LogFiles() []string {
	p.mu.Lock()
	files := append([]string(nil), p.outputs...)
	p.mu.Unlock()
	if lf := p.env["BRIDGE_LOG_FILE"]; lf != "" {
		files = append(files, lf)
	}
	return files
}

// LogBytes is the content of every log file, each preceded by a header line.
func (p *bridgeProc) LogBytes() []byte {
	var buf bytes.Buffer
	for _, f := range p.LogFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&buf, "==> %s <==\n", filepath.Base(f))
		buf.Write(b)
	}
	return buf.Bytes()
}

// Stop sends SIGTERM to the process group, waits up to stopGrace for the
// bridge to exit and returns its exit status. It fails the test if the bridge
// needed SIGKILL or left a process of its group behind.
func (p *bridgeProc) Stop() int {
	t := p.t
	t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil {
		t.Fatal("Stop: bridge never started")
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Errorf("bridge did not exit within %v of SIGTERM; killing it", stopGrace)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	p.assertGroupGone(pgid)
	return cmd.ProcessState.ExitCode()
}

// Kill9 sends SIGKILL to the process group and waits for the bridge to die.
func (p *bridgeProc) Kill9() {
	p.t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	p.assertGroupGone(cmd.Process.Pid)
}

// Restart stops the bridge (if it runs) and starts it again with the same
// environment, state dir and port, so URL() stays the same.
func (p *bridgeProc) Restart() {
	p.t.Helper()
	if p.running() {
		if code := p.Stop(); code != 0 {
			p.t.Errorf("bridge exited with status %d after SIGTERM", code)
		}
	}
	if _, port, err := net.SplitHostPort(p.Addr()); err == nil {
		p.env["PORT"] = port
	}
	p.start()
}

// assertGroupGone fails the test if any process of the group pgid remains, and kills it.
func (p *bridgeProc) assertGroupGone(pgid int) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return
	}
	p.t.Errorf("process group %d still has members after the bridge exited; killing them", pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// assertNotInFiles fails the test if any of the files contains one of the
// (non-empty) needles. Missing files are fine.
func assertNotInFiles(t testing.TB, files []string, needles ...string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for i, n := range needles {
			if n == "" {
				continue
			}
			if c := bytes.Count(b, []byte(n)); c > 0 {
				t.Errorf("%s holds secret #%d (%d chars) %d time(s)", f, i, len(n), c)
			}
		}
	}
}

// goSDKClient connects the official Go SDK client to url (Streamable HTTP, no
// standalone SSE stream) and closes the session in t.Cleanup.
func goSDKClient(t testing.TB, url string) *mcp.ClientSession {
	t.Helper()
	return goSDKClientWith(t, url, nil)
}

// goSDKClientWith is goSDKClient with client options (e.g. a progress handler).
func goSDKClientWith(t testing.TB, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bridge-e2e-go-sdk", Version: "test"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("Go SDK connect %s: %v", redact(url), err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// redact hides the capability secret in a URL for test output.
func redact(url string) string {
	if i := bytes.LastIndex([]byte(url), []byte("/mcp/")); i >= 0 {
		return url[:i] + "/mcp/<secret>"
	}
	return url
}

// progressLog records the progress notifications one client receives.
//
// The Go SDK hands notifications to its handler on another goroutine than the
// one delivering responses, so a notification sent just before a result may
// be recorded just after CallTool returned: wait with WaitFor, not a count.
type progressLog struct {
	mu      sync.Mutex
	events  []mcp.ProgressNotificationParams
	changed chan struct{} // closed and replaced on every event
}

func newProgressLog() *progressLog { return &progressLog{changed: make(chan struct{})} }

// WaitFor waits up to timeout until ok holds for the notifications carrying
// token, and returns them (also when it timed out).
func (l *progressLog) WaitFor(token any, timeout time.Duration, ok func([]mcp.ProgressNotificationParams) bool) ([]mcp.ProgressNotificationParams, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		evs := l.ForToken(token)
		if ok(evs) {
			return evs, true
		}
		select {
		case <-ch:
		case <-timer.C:
			return l.ForToken(token), false
		}
	}
}

// Options returns client options whose progress handler records into l.
func (l *progressLog) Options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.events = append(l.events, *req.Params)
			close(l.changed)
			l.changed = make(chan struct{})
		},
	}
}

// Events returns the notifications received so far, in arrival order.
func (l *progressLog) Events() []mcp.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]mcp.ProgressNotificationParams(nil), l.events...)
}

// ForToken returns the notifications carrying the given progress token.
func (l *progressLog) ForToken(token any) []mcp.ProgressNotificationParams {
	var out []mcp.ProgressNotificationParams
	want := fmt.Sprint(token)
	for _, e := range l.Events() {
		if fmt.Sprint(e.ProgressToken) == want {
			out = append(out, e)
		}
	}
	return out
}

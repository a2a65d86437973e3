package main

// End-to-end lifecycle with real processes: the real `bridge serve`, the real
// bridgectl binary, the fake cloudflared (a real process printing cloudflared's
// log lines and forwarding HTTP like the edge), and the DeepSeek double.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

const (
	testSecret = "test-secret-0123456789abcdef"
	testKey    = "sk-test-double-key"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// build skips under -short (these tests run the real daemon) and builds the
// binaries once per process, bridge next to bridgectl as installed.
func build(t *testing.T) {
	t.Helper()
	testenv.Real(t, "the real bridge daemon")
	installed(t, "bridgectl")
}

// installed is the path of name ("bridge" or "bridgectl") laid out as
// `make build` leaves bin/, bridge next to bridgectl (testenv.Installed).
func installed(t *testing.T, name string) string {
	t.Helper()
	for _, n := range []string{"bridge", "bridgectl"} {
		testenv.Installed(t, n, "./cmd/"+n, testenv.Build{})
	}
	return testenv.Installed(t, name, "./cmd/"+name, testenv.Build{})
}

// fakeCloudflared is the stand-in for cloudflared (built once per process).
func fakeCloudflared(t *testing.T) string {
	return testenv.Binary(t, "./cmd/bridgectl/internal/fakecloudflared")
}

type world struct {
	t         *testing.T
	dir       string
	envFile   string
	state     string
	environ   []string
	marker    string
	proxyFile string
	double    *deepseektest.Server
}

// worldBase builds the binaries and starts the double (answering "pong"),
// and returns it with a temp dir and a random suffix for process markers.
func worldBase(t *testing.T) (double *deepseektest.Server, dir, suffix string) {
	build(t)
	double = deepseektest.New(deepseektest.WithKey(testKey), deepseektest.WithDefault(deepseektest.Text("pong")))
	t.Cleanup(double.Close)
	suffix, err := ids.Hex(8)
	if err != nil {
		t.Fatal(err)
	}
	return double, t.TempDir(), suffix
}

func newWorld(t *testing.T) *world {
	double, dir, suffix := worldBase(t)
	w := &world{t: t, dir: dir, envFile: filepath.Join(dir, "bridge.env"), state: filepath.Join(dir, "state"),
		marker: "bridgectl-e2e-" + suffix, proxyFile: filepath.Join(dir, "edge-addr"), double: double}
	env := "# settings of an end-to-end test\n" +
		"DEEPSEEK_API_KEY=" + testKey + "\n" +
		"MCP_PATH_SECRET=" + testSecret + "\n" +
		"HOST=127.0.0.1\nPORT=0\n" +
		"DEEPSEEK_BASE_URL=" + double.URL() + "\n" +
		"BRIDGE_STATE_DIR=" + w.state + "\n" +
		"# a line bridgectl does not know\nSOMETHING_ELSE=kept\n"
	if err := os.WriteFile(w.envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	w.environ = []string{
		"PATH=/usr/bin:/bin", "HOME=" + home, "BRIDGE_ENV_FILE=" + w.envFile,
		"BRIDGE_CLOUDFLARED_BIN=" + fakeCloudflared(t),
		"FAKE_CLOUDFLARED_PROXY_FILE=" + w.proxyFile, "FAKE_CLOUDFLARED_DELAY_MS=5",
		"BRIDGECTL_E2E_MARKER=" + w.marker,
	}
	t.Cleanup(func() {
		w.ctl("stop")
		if left := w.leftovers(); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})
	return w
}

// ctl runs the bridgectl binary.
func (w *world) ctl(args ...string) (string, string, int) { return runCtl(w.t, w.environ, "", args...) }

// runCtl runs the bridgectl binary in dir ("" = this one) with environ and
// fails the test if it printed the path secret or the key.
func runCtl(t *testing.T, environ []string, dir string, args ...string) (string, string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, installed(t, "bridgectl"), args...)
	cmd.Env, cmd.Dir = environ, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run bridgectl: %v", err)
	}
	for _, s := range []string{testSecret, testKey} {
		if strings.Contains(out.String()+errb.String(), s) {
			t.Errorf("bridgectl %s printed a secret:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
		}
	}
	return out.String(), errb.String(), code
}

func (w *world) must(args ...string) string {
	w.t.Helper()
	out, errs, code := w.ctl(args...)
	if code != 0 {
		w.t.Fatalf("bridgectl %s: exit %d\n%s%s\n--- bridge.log:\n%s", strings.Join(args, " "), code, out, errs, w.file("bridge.log"))
	}
	return out
}

func (w *world) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(w.state, name))
	return string(b)
}

func (w *world) daemonInfo() (pid int, addr string) {
	var di statedir.DaemonInfo
	if err := json.Unmarshal([]byte(w.file("daemon.json")), &di); err != nil {
		w.t.Fatalf("daemon.json: %v", err)
	}
	return di.PID, di.Addr
}

func (w *world) tunnelPID() int {
	pid, _ := strconv.Atoi(strings.TrimSpace(w.file("tunnel.pid")))
	return pid
}

func (w *world) leftovers() []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(w.marker)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + d.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue // exited; a zombie holds only its exit status
		}
		cmd, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		left = append(left, d.Name()+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return left
}

func status(t *testing.T, method, url string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// initialize proves an MCP session works on endpoint (official Go SDK client).
func initialize(t *testing.T, endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.ListTools(ctx, nil)
	return err
}

func TestLifecycle(t *testing.T) {
	w := newWorld(t)

	// start: background daemon, pid file, start marker, /health.
	out := w.must("start")
	pid1, addr := w.daemonInfo()
	if !strings.Contains(out, fmt.Sprintf("started: pid %d, listening on http://%s", pid1, addr)) {
		t.Fatalf("start output: %q", out)
	}
	if got := strings.TrimSpace(w.file("bridge.pid")); got != strconv.Itoa(pid1) {
		t.Fatalf("pid file %q, daemon.json pid %d", got, pid1)
	}
	if !strings.Contains(w.file("bridge.log"), "=== bridgectl start ") {
		t.Fatal("bridge.log has no start marker")
	}
	if c := status(t, http.MethodGet, "http://"+addr+"/health"); c != 200 {
		t.Fatalf("/health: %d", c)
	}
	t.Logf("start: daemon pid %d on %s, pid file and start marker written, /health 200", pid1, addr)
	if _, errs, code := w.ctl("start"); code == 0 || !strings.Contains(errs, "already running") {
		t.Fatalf("second start: %d %q", code, errs)
	}

	// status
	out = w.must("status")
	for _, want := range []string{"bridge:    enabled", fmt.Sprintf("daemon:    running, pid %d, http://%s (health OK)", pid1, addr), "local:     http://" + addr + "/mcp/test…", "tunnel:    none", "(reported by the daemon)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// smoke against the local endpoint, deepseek_flash answered by the double.
	out = w.must("smoke")
	if strings.Count(out, "OK   ") != 6 {
		t.Fatalf("smoke:\n%s", out)
	}
	t.Logf("status: running, endpoints masked; smoke: 6 checks OK (health, 404s, initialize, tools/list, deepseek_flash)")

	// tunnel: fake cloudflared; requests through its edge proxy carry Host: *.trycloudflare.com.
	out = w.must("tunnel")
	tpid := w.tunnelPID()
	var ti struct{ URL, Origin string }
	json.Unmarshal([]byte(w.file("tunnel.json")), &ti)
	if !regexp.MustCompile(`^https://[a-z0-9-]+\.trycloudflare\.com$`).MatchString(ti.URL) || ti.Origin != "http://"+addr {
		t.Fatalf("tunnel.json: %+v", ti)
	}
	if !strings.Contains(out, "public endpoint: "+ti.URL+"/mcp/test…") {
		t.Fatalf("tunnel output: %q", out)
	}
	edge, _ := os.ReadFile(w.proxyFile)
	if err := initialize(t, "http://"+string(edge)+"/mcp/"+testSecret); err != nil {
		t.Fatalf("MCP through the tunnel: %v", err)
	}
	// smoke URL: the same checks through the edge (Host: the trycloudflare name).
	if out := w.must("smoke", "--no-flash", "http://"+string(edge)+"/mcp/"+testSecret); strings.Count(out, "OK   ") != 5 {
		t.Fatalf("smoke through the tunnel:\n%s", out)
	}
	t.Logf("tunnel: cloudflared pid %d, %s, MCP and smoke work through the edge", tpid, ti.URL)

	// reload: a new daemon on the same address; the tunnel process is untouched.
	w.must("reload")
	pid2, addr2 := w.daemonInfo()
	if pid2 == pid1 || addr2 != addr {
		t.Fatalf("reload: pid %d→%d, addr %s→%s", pid1, pid2, addr, addr2)
	}
	if w.tunnelPID() != tpid || !alive(tpid) {
		t.Fatalf("reload touched the tunnel: pid %d → %d (alive %v)", tpid, w.tunnelPID(), alive(tpid))
	}
	if alive(pid1) {
		t.Fatalf("the old daemon %d is still alive", pid1)
	}
	if err := initialize(t, "http://"+string(edge)+"/mcp/"+testSecret); err != nil {
		t.Fatalf("MCP through the tunnel after reload: %v\n--- tunnel.log:\n%s", err, w.file("tunnel.log"))
	}
	t.Logf("reload: daemon pid %d → %d on the same %s; tunnel pid %d untouched", pid1, pid2, addr, tpid)

	// rotate: new secret in .env (other lines kept), reload, old URL 404, new URL works; tunnel untouched.
	before, _ := os.ReadFile(w.envFile)
	out = w.must("rotate")
	after, _ := os.ReadFile(w.envFile)
	m := regexp.MustCompile(`(?m)^MCP_PATH_SECRET=([0-9a-f]{64})$`).FindStringSubmatch(string(after))
	if m == nil {
		t.Fatalf(".env after rotate:\n%s", after)
	}
	newSecret := m[1]
	if string(after) != strings.Replace(string(before), testSecret, newSecret, 1) {
		t.Fatalf("rotate changed more than the secret:\n%s", after)
	}
	if strings.Contains(out, newSecret) || !strings.Contains(out, "old URL: 404") {
		t.Fatalf("rotate output: %q", out)
	}
	_, addr3 := w.daemonInfo()
	for _, base := range []string{"http://" + addr3, "http://" + string(edge)} {
		if c := status(t, http.MethodPost, base+"/mcp/"+testSecret); c != 404 {
			t.Errorf("old URL via %s: %d, want 404", base, c)
		}
		if err := initialize(t, base+"/mcp/"+newSecret); err != nil {
			t.Errorf("new URL via %s: %v\n--- tunnel.log:\n%s", base, err, w.file("tunnel.log"))
		}
	}
	if w.tunnelPID() != tpid || !alive(tpid) {
		t.Fatalf("rotate touched the tunnel")
	}
	t.Logf("rotate: old URL 404 locally and through the tunnel, new URL initializes; tunnel pid %d untouched; secret never printed", tpid)
	out = w.must("url", "--show")
	if !strings.Contains(out, ti.URL+"/mcp/"+newSecret) {
		t.Fatalf("url --show: %q", out)
	}
	if out := w.must("logs", "-n", "500"); strings.Contains(out, newSecret) {
		t.Fatalf("logs printed the secret")
	}

	// stop: daemon and tunnel gone, nothing left in /proc, pid files removed.
	pid3, _ := w.daemonInfo()
	out = w.must("stop")
	if !strings.Contains(out, fmt.Sprintf("tunnel stopped (pid %d)", tpid)) || !strings.Contains(out, fmt.Sprintf("daemon stopped (pid %d)", pid3)) {
		t.Fatalf("stop output: %q", out)
	}
	if left := w.leftovers(); len(left) > 0 {
		t.Fatalf("left after stop: %v", left)
	}
	for _, f := range []string{"bridge.pid", "tunnel.pid", "tunnel.json", "daemon.json"} {
		if _, err := os.Stat(filepath.Join(w.state, f)); err == nil {
			t.Errorf("%s left after stop", f)
		}
	}
	if out := w.must("status"); !strings.Contains(out, "daemon:    stopped") {
		t.Fatalf("status after stop:\n%s", out)
	}
	t.Logf("stop: daemon and tunnel stopped, pid files removed, no process with the test's marker in /proc")
}

func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// start --foreground replaces bridgectl with the daemon: same pid, so the pid
// file names the daemon, and `bridgectl stop` ends it with exit status 0.
func TestStartForeground(t *testing.T) {
	ctl := testenv.Binary(t, "./cmd/bridgectl")
	fake := testenv.Binary(t, "./cmd/bridgectl/internal/fakebridge")
	dir := t.TempDir()
	envFile := filepath.Join(dir, "bridge.env")
	state := filepath.Join(dir, "state")
	os.WriteFile(envFile, []byte("MCP_PATH_SECRET="+testSecret+"\nDEEPSEEK_API_KEY="+testKey+"\nPORT=0\nBRIDGE_STATE_DIR="+state+"\n"), 0o600)
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "BRIDGE_BIN=" + fake}
	var out bytes.Buffer
	fg := exec.Command(ctl, "--env", envFile, "start", "--foreground")
	fg.Env, fg.Stdout, fg.Stderr = environ, &out, &out
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = fg.Wait(); close(exited) }()
	t.Cleanup(func() {
		fg.Process.Kill()
		<-exited
	})
	// Wait for daemon.json, or for bridgectl to exit without writing one.
	pid := 0
	settled := poll.Until(20*time.Second, func() bool {
		var di statedir.DaemonInfo
		if statedir.ReadJSON(filepath.Join(state, "daemon.json"), &di) == nil && di.PID != 0 {
			pid = di.PID
			return true
		}
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	switch {
	case pid != 0:
		if pid != fg.Process.Pid {
			t.Fatalf("daemon.json pid %d, bridgectl's pid %d: --foreground did not exec", pid, fg.Process.Pid)
		}
	case settled:
		t.Fatalf("start --foreground exited: %v\n%s", waitErr, out.String())
	default:
		t.Fatalf("no daemon.json\n%s", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(state, "bridge.pid")); strings.TrimSpace(string(b)) != strconv.Itoa(fg.Process.Pid) {
		t.Fatalf("pid file %q, want %d", b, fg.Process.Pid)
	}
	stop := exec.Command(ctl, "--env", envFile, "stop")
	stop.Env = environ
	so, err := stop.CombinedOutput()
	if err != nil || !strings.Contains(string(so), fmt.Sprintf("daemon stopped (pid %d)", fg.Process.Pid)) {
		t.Fatalf("stop: %v %s", err, so)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("the foreground daemon exited with %v", waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the foreground daemon did not exit")
	}
}

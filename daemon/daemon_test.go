package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

const testSecret = configtest.Secret

// noFlash is deepseek_flash's client of a daemon test: never called.
type noFlash struct{}

func (noFlash) Flash(context.Context, deepseek.FlashRequest) (deepseek.FlashResult, error) {
	return deepseek.FlashResult{}, errors.New("not in this test")
}

// newTestDaemon builds a daemon on 127.0.0.1:0 in a temp dir, without a key.
func newTestDaemon(t *testing.T, logs *syncbuf.Buffer) *Daemon {
	t.Helper()
	cfg := configtest.New(t, map[string]string{"HOST": "127.0.0.1", "PORT": "0", "DEEPSEEK_API_KEY": ""})
	d, err := New(cfg, Options{Flash: noFlash{}, Logger: zerolog.New(logs), Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newTestDaemonIn builds a daemon on cfg, as a restart would.
func newTestDaemonIn(t *testing.T, cfg config.Config) *Daemon {
	t.Helper()
	d, err := New(cfg, Options{Flash: noFlash{}, Logger: zerolog.Nop(), Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The real daemon: PORT 0 picks a free port, daemon.json names the bound
// address and the modes, the endpoint answers, and Close stops the server and
// removes daemon.json.
func TestDaemonRunAndClose(t *testing.T) {
	var logs syncbuf.Buffer
	d := newTestDaemon(t, &logs)
	if err := d.Run(t.Context()); err != nil {
		d.Close(t.Context())
		t.Fatal(err)
	}
	addr := d.Addr()
	if _, port, _ := net.SplitHostPort(addr); port == "0" || port == "" {
		t.Errorf("addr %q is not the bound address", addr)
	}
	infoPath := filepath.Join(d.cfg.StateDir, "daemon.json")
	b, err := os.ReadFile(infoPath)
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info["version"] != float64(1) || info["pid"] != float64(os.Getpid()) || info["addr"] != addr || info["started_at"] == "" || info["harness"] == nil {
		t.Errorf("daemon.json = %s", b)
	}
	if info["approval"] != "on" || (info["sandbox"] != "on" && info["sandbox"] != "unavailable") {
		t.Errorf("daemon.json approval %v sandbox %v", info["approval"], info["sandbox"])
	}
	// Who the daemon is beyond its pid, for bridgectl's check before a signal.
	exe, _ := os.Executable()
	if self, err := statedir.Identify(os.Getpid()); err != nil || info["exe"] != exe || info["proc_start"] != self.Start || self.Start == "" {
		t.Errorf("daemon.json exe %v proc_start %v, want %s %s (%v)", info["exe"], info["proc_start"], exe, self.Start, err)
	}
	if pid, err := (statedir.Dir{Root: d.cfg.StateDir}).LockHolder(); pid != os.Getpid() || err != nil {
		t.Errorf("lock holder = %d, %v; want the daemon", pid, err)
	}
	if info["path"] != os.Getenv("PATH") {
		t.Errorf("daemon.json path %v, want the daemon's PATH %q", info["path"], os.Getenv("PATH"))
	}
	if h, _ := info["harness"].(map[string]any); h["kind"] != "claude-code" || h["available"] != false || !strings.Contains(h["error"].(string), "DEEPSEEK_API_KEY") {
		t.Errorf("daemon.json harness %v", info["harness"])
	}
	if st, _ := os.Stat(infoPath); st.Mode().Perm() != 0o600 {
		t.Errorf("daemon.json mode %v", st.Mode().Perm())
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()

	if err := d.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-d.Done():
	default:
		t.Error("Done is open after Close")
	}
	if _, err := os.Stat(infoPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json still there after a clean shutdown: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Error("still serving after Close")
	}
	if !strings.Contains(logs.String(), "listening on http://"+addr) {
		t.Errorf("log lacks the listening line:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), testSecret) {
		t.Error("the secret reached the log")
	}
}

// The daemon holds the state dir's lock from New to Close: a second daemon
// on the same state dir is refused, and starts once the first has closed
// (also one that never ran).
func TestDaemonHoldsTheStateDirLock(t *testing.T) {
	var logs syncbuf.Buffer
	first := newTestDaemon(t, &logs)
	cfg := first.cfg
	if _, err := New(cfg, Options{Flash: noFlash{}, Logger: zerolog.New(&logs)}); !errors.Is(err, statedir.ErrLocked) {
		t.Fatalf("second daemon: %v, want ErrLocked", err)
	}
	if !strings.Contains(logs.String(), "refusing to start") {
		t.Errorf("log: %s", logs.String())
	}
	if err := first.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	second, err := New(cfg, Options{Flash: noFlash{}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	second.Close(t.Context())
}

// A taken port fails Run with the listen error; Close still releases all.
// LoadEnv reads the environment, logs to BRIDGE_LOG_FILE tagged with the
// command, and warns when there is no key.
func TestLoadEnv(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.env") // named, so no stray ./.env is read
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "bridge.log")
	for k, v := range map[string]string{"BRIDGE_ENV_FILE": empty, "MCP_PATH_SECRET": testSecret, "DEEPSEEK_API_KEY": "",
		"BRIDGE_STATE_DIR": filepath.Join(dir, "state"), "BRIDGE_LOG_FILE": logFile, "BRIDGE_LOG_LEVEL": "debug"} {
		t.Setenv(k, v)
	}
	var stderr syncbuf.Buffer
	env, err := LoadEnv("serve", "", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if env.Config.PathSecret != testSecret || env.Flash == nil {
		t.Errorf("env %+v", env)
	}
	env.Close()
	logs, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logs), "DEEPSEEK_API_KEY is not set") || !strings.Contains(string(logs), `"cmd":"serve"`) {
		t.Errorf("log lacks the key warning or the command:\n%s", logs)
	}
	if strings.Contains(string(logs)+stderr.String(), testSecret) {
		t.Error("the secret reached the log or stderr")
	}
	t.Setenv("BRIDGE_LOG_LEVEL", "loud")
	if _, err := LoadEnv("serve", "", &stderr); err == nil || !strings.Contains(err.Error(), "BRIDGE_LOG_LEVEL") {
		t.Errorf("bad log level: %v", err)
	}
}

// fakeLister is a registry of fixed jobs for the approval sink.
type fakeLister struct {
	snaps []jobs.Snapshot
	set   []string
}

func (f *fakeLister) List() []jobs.Snapshot { return f.snaps }
func (f *fakeLister) SetWaiting(id string, a *jobs.ApprovalInfo) {
	if a == nil {
		f.set = append(f.set, id+"=running")
		return
	}
	f.set = append(f.set, id+"="+a.ID+":"+a.Summary)
}

// The watcher sees the running and waiting jobs as live, and its requests
// reach the registry as ApprovalInfo.
func TestApprovalSink(t *testing.T) {
	reg := &fakeLister{snaps: []jobs.Snapshot{
		{ID: "r", Status: jobs.StatusRunning}, {ID: "w", Status: jobs.StatusWaitingApproval},
		{ID: "q", Status: jobs.StatusQueued}, {ID: "c", Status: jobs.StatusCancelled}, {ID: "d", Status: jobs.StatusDone},
	}}
	s := approvalSink{reg}
	if got, want := s.LiveJobs(), []approvals.LiveJob{{ID: "r"}, {ID: "w", Waiting: true}}; !slices.Equal(got, want) {
		t.Errorf("LiveJobs = %v, want %v", got, want)
	}
	s.SetWaiting("r", &approvals.PendingRequest{ID: "req1", JobID: "r", Summary: "Bash: rm -rf build"})
	s.SetWaiting("w", nil)
	if want := []string{"r=req1:Bash: rm -rf build", "w=running"}; !slices.Equal(reg.set, want) {
		t.Errorf("SetWaiting calls %v, want %v", reg.set, want)
	}
}

// The daemon also serves MCP on <state>/daemon.sock: mode 0600 in a 0700
// dir, no path secret, named in daemon.json with the .env it started with;
// the socket is gone after Close.
func TestDaemonServesUnixSocket(t *testing.T) {
	var logs syncbuf.Buffer
	d := newTestDaemon(t, &logs)
	if err := d.Run(t.Context()); err != nil {
		d.Close(t.Context())
		t.Fatal(err)
	}
	sock := filepath.Join(d.cfg.StateDir, "daemon.sock")
	if d.Socket() != sock {
		t.Fatalf("Socket() = %q, want %q", d.Socket(), sock)
	}
	for p, want := range map[string]os.FileMode{sock: 0o600, d.cfg.StateDir: 0o700} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %04o", p, fi.Mode().Perm(), err, want)
		}
	}
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(filepath.Join(d.cfg.StateDir, "daemon.json"), &info); err != nil {
		t.Fatal(err)
	}
	if info.Socket != sock || info.EnvFile != d.cfg.EnvFile || info.EnvFile == "" || info.AllowedRoots == nil {
		t.Errorf("daemon.json socket %q env_file %q roots %v; want %q, %q, []", info.Socket, info.EnvFile, info.AllowedRoots, sock, d.cfg.EnvFile)
	}
	// The record names this process beyond its pid, and the modes it booted with.
	if info.PID != os.Getpid() || info.Process().Check() != nil || info.Addr != d.Addr() || info.Harness == nil || info.Harness.Kind != "claude-code" || info.Sandbox == "" || info.Approval == "" {
		t.Errorf("daemon.json %+v (harness %+v): want pid %d with its start time, addr %s, the harness and both modes", info, info.Harness, os.Getpid(), d.Addr())
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://x/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "deepseek_agent_start") {
		t.Errorf("tools/list over the socket: %d %s", resp.StatusCode, body)
	}
	hc.CloseIdleConnections()
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v, want gone", err)
	}
}

// A taken port fails New before the model proxy listens or agent jobs are
// announced: nothing in the log says the daemon is up when it is not.
func TestDaemonBindsFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg := configtest.New(t, map[string]string{"HOST": "127.0.0.1", "PORT": port})
	var logs syncbuf.Buffer
	d, err := New(cfg, Options{Flash: noFlash{}, Logger: zerolog.New(&logs)})
	if err == nil {
		d.Close(t.Context())
		t.Fatal("New on a taken port succeeded")
	}
	if !strings.Contains(err.Error(), "listen on 127.0.0.1:"+port) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("New = %v", err)
	}
	if hint := ListenHint(err, cfg); !strings.Contains(hint, "sport = :"+port) || !strings.Contains(hint, "PORT=0 picks a free port") {
		t.Errorf("hint %q", hint)
	}
	if hint := ListenHint(errors.New("serve: boom"), cfg); hint != "" {
		t.Errorf("hint for another error: %q", hint)
	}
	if l := logs.String(); strings.Contains(l, "model proxy listening") || strings.Contains(l, "agent jobs can run") {
		t.Errorf("logged as up before the bind failed:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "daemon.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json written without a listener: %v", err)
	}
	// The lock is free again: a second daemon can start on another port.
	cfg.Port = 0
	d, err = New(cfg, Options{Flash: noFlash{}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("after a failed New: %v", err)
	}
	d.Close(t.Context())
}

// `bridgectl start --foreground` writes bridge.pid naming the process it
// becomes; when that daemon stops (Ctrl-C) it removes the file. A pid file
// naming another process is not the daemon's to remove.
func TestDaemonRemovesItsPIDFile(t *testing.T) {
	d := newTestDaemon(t, &syncbuf.Buffer{})
	pidFile := filepath.Join(d.cfg.StateDir, "bridge.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		d.Close(t.Context())
		t.Fatal(err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bridge.pid naming this daemon stayed behind: %v", err)
	}

	d = newTestDaemonIn(t, d.cfg)
	other := []byte(strconv.Itoa(os.Getpid()+1) + "\n")
	if err := os.WriteFile(pidFile, other, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		d.Close(t.Context())
		t.Fatal(err)
	}
	d.Close(t.Context())
	if b, err := os.ReadFile(pidFile); err != nil || !bytes.Equal(b, other) {
		t.Errorf("another process's pid file: %q, %v", b, err)
	}
}

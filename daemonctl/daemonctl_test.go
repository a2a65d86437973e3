package daemonctl

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

const testSecret = "test-secret-0123456789abcdef"

// world is one state dir and .env, with a Controller whose daemon is this
// test binary in the fake daemon's mode.
type world struct {
	t       *testing.T
	c       *Controller
	out     *syncbuf.Buffer // the Controller's Stdout
	errs    *syncbuf.Buffer // its Stderr
	envFile string
}

func newWorld(t *testing.T, mode string, envLines ...string) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, out: &syncbuf.Buffer{}, errs: &syncbuf.Buffer{}, envFile: filepath.Join(root, "bridge.env")}
	lines := append([]string{"MCP_PATH_SECRET=" + testSecret, "DEEPSEEK_API_KEY=sk-test-key", "HOST=127.0.0.1", "PORT=0", "BRIDGE_STATE_DIR=" + filepath.Join(root, "state")}, envLines...)
	if err := os.WriteFile(w.envFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFrom(w.envFile, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.c = &Controller{Config: cfg, Dir: statedir.Dir{Root: cfg.StateDir}, EnvPath: w.envFile,
		Environ: append(os.Environ(), fakeEnv+"="+mode), Bin: self, Stdout: w.out, Stderr: w.errs,
		For: "daemonctl test", StartTimeout: 20 * time.Second, StopGrace: 2 * time.Second}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if s, err := w.c.Stop(ctx); err != nil {
			t.Errorf("stop at cleanup: %v (pid %d)", err, s.PID)
		}
	})
	return w
}

func (w *world) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(w.c.Dir.Root, name))
	return string(b)
}

func (w *world) exists(name string) bool {
	_, err := os.Stat(filepath.Join(w.c.Dir.Root, name))
	return err == nil
}

// Start runs the daemon detached and returns once it answers: its pid is in
// bridge.pid and daemon.json, it holds the lock, the log has the start
// marker; Stop ends it and removes both files.
func TestStartAndStop(t *testing.T) {
	w := newWorld(t, "serve")
	st, err := w.c.Start(t.Context(), StartOptions{})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, w.file("bridge.log"))
	}
	if st.PID == 0 || !st.Healthy || st.Info == nil || st.Info.PID != st.PID || st.Addr != DialAddr(st.Info.Addr) {
		t.Fatalf("start returned %+v", st)
	}
	if pid, err := ReadPID(w.c.Dir.PIDFile()); err != nil || pid != st.PID {
		t.Errorf("bridge.pid: %d (%v), want %d", pid, err, st.PID)
	}
	if holder, err := w.c.Dir.LockHolder(); err != nil || holder != st.PID {
		t.Errorf("lock holder %d (%v), want %d", holder, err, st.PID)
	}
	log := w.file("bridge.log")
	if !strings.Contains(log, "=== bridgectl start ") || !strings.Contains(log, " for daemonctl test ===") || !strings.Contains(log, `["serve" "--env" "`+w.envFile+`"]`) {
		t.Errorf("bridge.log lacks the marker or the daemon's arguments:\n%s", log)
	}
	if found := w.c.Probe(t.Context()); found.PID != st.PID || !found.Healthy || found.Info == nil || found.InfoNote != "" || found.StalePID != 0 {
		t.Errorf("probe of the running daemon: %+v", found)
	}
	stopped, err := w.c.Stop(t.Context())
	if err != nil || stopped.PID != st.PID {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	if PIDAlive(st.PID) {
		t.Errorf("pid %d alive after Stop", st.PID)
	}
	for _, f := range []string{"bridge.pid", "daemon.json"} {
		if w.exists(f) {
			t.Errorf("%s left after Stop", f)
		}
	}
	if again, err := w.c.Stop(t.Context()); err != nil || again.PID != 0 {
		t.Errorf("a second Stop: %+v %v, want nothing stopped", again, err)
	}
}

// A daemon that never answers is stopped, its pid file removed, and the
// error carries the last lines of its log (Tail) for the caller to show.
func TestStartFailures(t *testing.T) {
	// Both cases wait long: the exit case's wait ends with the daemon's
	// own exit, and the mute fake must have printed its line before the
	// wait gives up (a race-built fake on a loaded 2-core machine took
	// over a second to start). The two run side by side.
	tests := []struct {
		mode, why, tail string
		timeout         time.Duration
	}{
		{"exit", "the daemon exited during start (exit status 3)", "refusing to start \x1b[31mred", time.Minute},
		{"mute", "did not answer /health within 10s", "fake daemon: mode mute", 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, tt.mode)
			w.c.StartTimeout = tt.timeout
			_, err := w.c.Start(t.Context(), StartOptions{})
			var se *StartError
			if !errors.As(err, &se) || !strings.Contains(se.Why, tt.why) || !strings.Contains(err.Error(), "the daemon's log is above") {
				t.Fatalf("start: %v, want a StartError saying %q", err, tt.why)
			}
			if !strings.Contains(strings.Join(se.Tail, "\n"), tt.tail) || strings.Contains(strings.Join(se.Tail, "\n"), "=== bridgectl") {
				t.Errorf("tail %q lacks %q (or holds the marker)", se.Tail, tt.tail)
			}
			if w.exists("bridge.pid") {
				t.Error("bridge.pid left after a failed start")
			}
			if !poll.Until(5*time.Second, func() bool { h, err := w.c.Dir.LockHolder(); return err == nil && h == 0 }) {
				t.Error("the failed daemon still holds the state dir's lock")
			}
		})
	}
}

// Preflight refuses what would make the daemon fail before anything runs,
// naming the fix; a missing API key only warns.
func TestPreflight(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(PortOf(taken.Addr().String()))
	tests := []struct {
		name    string
		env     []string
		wantErr []string
		warn    string
	}{
		{"short secret", []string{"MCP_PATH_SECRET=x7q2k"}, []string{"MCP_PATH_SECRET is 5 characters", "bridgectl secret"}, ""},
		{"taken port", []string{"PORT=" + port}, []string{"port " + port + " on 127.0.0.1 is taken", "sport = :" + port, "PORT"}, ""},
		{"no API key", []string{"DEEPSEEK_API_KEY="}, nil, "warning: DEEPSEEK_API_KEY is not set in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "serve", tt.env...)
			_, err := w.c.Start(t.Context(), StartOptions{})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
			} else {
				for _, want := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("start: %v, want %q", err, want)
					}
				}
				if w.exists("bridge.log") || w.exists("bridge.pid") {
					t.Error("a refused start ran the daemon")
				}
			}
			if tt.warn != "" && !strings.Contains(w.errs.String(), tt.warn+w.envFile) {
				t.Errorf("stderr %q lacks %q", w.errs.String(), tt.warn)
			}
		})
	}
}

// A daemon that ignores SIGTERM is killed after StopGrace, group and all.
func TestStopKillsADaemonThatIgnoresTERM(t *testing.T) {
	w := newWorld(t, "ignore-term")
	w.c.StopGrace = 300 * time.Millisecond
	st, err := w.c.Start(t.Context(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if s, err := w.c.Stop(t.Context()); err != nil || s.PID != st.PID {
		t.Fatalf("stop: %+v %v", s, err)
	}
	if PIDAlive(st.PID) || time.Since(begin) < 300*time.Millisecond {
		t.Errorf("after %v pid %d alive=%v: want it killed after the grace", time.Since(begin), st.PID, PIDAlive(st.PID))
	}
}

// A pid file naming a live process that is not the daemon is stale: Find
// says so, Stop leaves the process alone, a start removes the file.
func TestStalePIDIsLeftAlone(t *testing.T) {
	w := newWorld(t, "serve")
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	if err := os.MkdirAll(w.c.Dir.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WritePID(w.c.Dir.PIDFile(), sleep.Process.Pid); err != nil {
		t.Fatal(err)
	}
	s := w.c.Find()
	if s.PID != 0 || s.StalePID != sleep.Process.Pid || !strings.Contains(s.StaleNote, "stale, left alone") {
		t.Fatalf("find: %+v", s)
	}
	if st, err := w.c.Stop(t.Context()); err != nil || st.PID != 0 || !PIDAlive(sleep.Process.Pid) {
		t.Fatalf("stop signalled the stale pid: %+v %v", st, err)
	}
	WritePID(w.c.Dir.PIDFile(), sleep.Process.Pid)
	if err := w.c.ReadyToStart(t.Context()); err != nil || w.exists("bridge.pid") || !strings.Contains(w.errs.String(), "note: removing a stale pid file") {
		t.Fatalf("ready to start: %v; bridge.pid there: %v; stderr %q", err, w.exists("bridge.pid"), w.errs.String())
	}
}

// ReadyToStart refuses while disabled and while a daemon runs.
func TestReadyToStartRefuses(t *testing.T) {
	w := newWorld(t, "serve")
	if _, err := w.c.Start(t.Context(), StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.c.ReadyToStart(t.Context()); err == nil || !strings.Contains(err.Error(), "the daemon is already running") {
		t.Errorf("with a daemon running: %v", err)
	}
	if err := os.WriteFile(w.c.Dir.DisabledFlag(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.c.ReadyToStart(t.Context()); !errors.Is(err, ErrDisabled) {
		t.Errorf("disabled: %v", err)
	}
}

// With PORT=0 a reload comes back on the port the daemon had (a tunnel's
// origin keeps working), as a new process.
func TestReloadKeepsThePort(t *testing.T) {
	w := newWorld(t, "serve")
	first, err := w.c.Start(t.Context(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.c.CheckBeforeStop(first); err != nil {
		t.Fatalf("check before stop: %v", err)
	}
	second, err := w.c.Reload(t.Context(), first)
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, w.file("bridge.log"))
	}
	if second.PID == first.PID || PIDAlive(first.PID) || second.Addr != first.Addr {
		t.Fatalf("reload: pid %d→%d (old alive: %v), addr %s→%s", first.PID, second.PID, PIDAlive(first.PID), first.Addr, second.Addr)
	}
}

// CheckBeforeStop refuses, with nothing stopped, what the new daemon could
// not start with.
func TestCheckBeforeStop(t *testing.T) {
	w := newWorld(t, "serve")
	running := Status{PID: 4242, Addr: "127.0.0.1:1"}
	w.c.Config.PathSecret = "x7q2k"
	err := w.c.CheckBeforeStop(running)
	if !errors.Is(err, ErrKeptRunning) || !errors.Is(err, config.ErrBadSecret) || !strings.Contains(err.Error(), "the daemon (pid 4242) still runs") {
		t.Fatalf("bad secret: %v", err)
	}
	w.c.Config.PathSecret = testSecret
	w.c.Bin = ""
	w.c.Environ = []string{"PATH=" + t.TempDir()}
	if err := w.c.CheckBeforeStop(running); !errors.Is(err, ErrKeptRunning) || !strings.Contains(err.Error(), "`bridge` binary was not found") {
		t.Fatalf("no bridge binary: %v", err)
	}
}

// FindBridge: BRIDGE_BIN, then next to the caller, then PATH — but not
// iproute2's bridge.
func TestFindBridge(t *testing.T) {
	script := func(dir, out string) string {
		p := filepath.Join(dir, "bridge")
		if err := os.WriteFile(p, []byte("#!/bin/sh\nprintf '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	next, onPath, iproute, empty := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	nextBin := script(next, `bridge dev\n`)
	pathBin := script(onPath, `bridge dev\n`)
	script(iproute, `Usage: bridge [ OPTIONS ] OBJECT\n  where OBJECT := { link | fdb }\n`)
	tests := []struct {
		name    string
		environ []string
		exe     string
		want    string // the path, or text of the error
	}{
		{"BRIDGE_BIN", []string{"BRIDGE_BIN=" + pathBin, "PATH=" + onPath}, filepath.Join(next, "bridgectl"), pathBin},
		{"BRIDGE_BIN missing", []string{"BRIDGE_BIN=" + filepath.Join(empty, "bridge")}, "", "BRIDGE_BIN=" + filepath.Join(empty, "bridge")},
		{"next to bridgectl", []string{"PATH=" + onPath}, filepath.Join(next, "bridgectl"), nextBin},
		{"on PATH", []string{"PATH=" + empty + ":" + onPath}, filepath.Join(empty, "bridgectl"), pathBin},
		{"iproute2's", []string{"PATH=" + iproute}, filepath.Join(empty, "bridgectl"), "is not the DeepSeek MCP bridge (iproute2 has one too)"},
		{"none", []string{"PATH=" + empty}, filepath.Join(empty, "bridgectl"), "not found next to bridgectl or on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindBridge(tt.environ, tt.exe)
			if err != nil {
				got = err.Error()
			}
			if err == nil && got != tt.want || err != nil && !strings.Contains(got, tt.want) {
				t.Fatalf("FindBridge = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadPID(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		pid           int
		err           string
	}{
		{"missing", "", 0, ""},
		{"a pid", "4242\n", 4242, ""},
		{"corrupt", "not a pid\n", 0, "is corrupt (\"not a pid\"): remove it"},
		{"zero", "0\n", 0, "is corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".pid")
			if tt.content != "" {
				os.WriteFile(p, []byte(tt.content), 0o600)
			}
			pid, err := ReadPID(p)
			if pid != tt.pid || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ReadPID = %d, %v; want %d, %q", pid, err, tt.pid, tt.err)
			}
		})
	}
}

// What a log scraper reads is what follows the latest start marker.
func TestAfterLatestMarker(t *testing.T) {
	log := "old\n=== bridgectl start 2025-01-01T00:00:00Z pid 1 ===\nfirst\n=== bridgectl tunnel 2025 pid 2 ===\nt\n=== bridgectl start 2025-01-02T00:00:00Z pid 3 for x ===\nsecond\nthird\n"
	for what, want := range map[string]string{"start": "second\nthird\n", "tunnel": "t\n=== bridgectl start 2025-01-02T00:00:00Z pid 3 for x ===\nsecond\nthird\n", "none": log} {
		if got := string(AfterLatestMarker([]byte(log), what)); got != want {
			t.Errorf("after %s: %q, want %q", what, got, want)
		}
	}
	p := filepath.Join(t.TempDir(), "bridge.log")
	os.WriteFile(p, []byte(log), 0o600)
	if got := logTail(p, "start", 1); len(got) != 1 || got[0] != "third" {
		t.Errorf("logTail = %q", got)
	}
}

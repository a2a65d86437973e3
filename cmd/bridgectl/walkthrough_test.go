package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// appendEnv adds lines to the world's .env file.
func (w *world) appendEnv(lines ...string) {
	w.t.Helper()
	f, err := os.OpenFile(w.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		w.t.Fatal(err)
	}
}

// deadURL is a loopback URL nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// smoke against a dead upstream prints each failed attempt as it comes, not
// only the verdict after the last retry.
func TestSmokeShowsEachAttempt(t *testing.T) {
	w := newWorld(t)
	w.appendEnv("DEEPSEEK_BASE_URL="+deadURL(t), "DEEPSEEK_TIMEOUT_MS=4000")
	w.must("start")
	out, _, code := w.ctl("smoke")
	if code == 0 || !strings.Contains(out, "FAIL deepseek_flash") {
		t.Fatalf("smoke against a dead upstream: exit %d\n%s", code, out)
	}
	t.Logf("smoke:\n%s", out)
	if n := strings.Count(out, "deepseek_flash: attempt "); n < 2 {
		t.Fatalf("%d attempt lines, want one per retry:\n%s", n, out)
	}
	if !strings.Contains(out, "deepseek_flash: attempt 1 failed (") || !strings.Contains(out, "); retrying in ") {
		t.Fatalf("attempt lines:\n%s", out)
	}
}

// After `bridgectl start --foreground` and Ctrl-C, the real daemon exits and
// bridge.pid, which named it, is gone.
func TestForegroundCtrlCRemovesThePIDFile(t *testing.T) {
	w := newWorld(t)
	fg := exec.Command(installed(t, "bridgectl"), "start", "--foreground")
	fg.Env = w.environ
	var out syncbuf.Buffer
	fg.Stdout, fg.Stderr = &out, &out
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- fg.Wait() }() // owner: the test; joined below
	t.Cleanup(func() { fg.Process.Kill() })
	if !poll.Until(30*time.Second, func() bool {
		var di statedir.DaemonInfo
		return json.Unmarshal([]byte(w.file("daemon.json")), &di) == nil && di.PID == fg.Process.Pid
	}) {
		t.Fatalf("the foreground daemon did not come up:\n%s", out.String())
	}
	if got := strings.TrimSpace(w.file("bridge.pid")); got != strconv.Itoa(fg.Process.Pid) {
		t.Fatalf("bridge.pid %q, want %d", got, fg.Process.Pid)
	}
	fg.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		fg.Process.Kill()
		t.Fatalf("the daemon did not stop on Ctrl-C:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(w.state, "bridge.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bridge.pid stayed behind: %v", err)
	}
	if st := w.must("status"); !strings.Contains(st, "daemon:    stopped") || strings.Contains(st, "stale") {
		t.Errorf("status after Ctrl-C:\n%s", st)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
)

const testSecret = "test-secret-0123456789abcdef"

// cleanEnv points every variable the bridge reads at test values.
func cleanEnv(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.env") // named, so no stray ./.env is read
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{
		"BRIDGE_ENV_FILE":  empty,
		"MCP_PATH_SECRET":  testSecret,
		"DEEPSEEK_API_KEY": "",
		"HOST":             "127.0.0.1",
		"PORT":             "0",
		"BRIDGE_STATE_DIR": filepath.Join(dir, "state"),
		"BRIDGE_LOG_FILE":  filepath.Join(dir, "bridge.log"),
		"BRIDGE_LOG_LEVEL": "debug",
	}
	for k, v := range extra {
		vals[k] = v
	}
	for k, v := range vals {
		t.Setenv(k, v)
	}
	return dir
}

// Asked-for help goes to stdout with exit 0 (so `| less` shows it); a usage
// mistake goes to stderr with exit 2.
func TestHelpStreams(t *testing.T) {
	tests := []struct {
		args  []string
		code  int
		want  string
		toOut bool
	}{
		{[]string{"help"}, exitOK, "Usage:", true},
		{[]string{"--help"}, exitOK, "Usage:", true},
		{[]string{"help", "serve"}, exitOK, "Usage: bridge serve", true},
		{[]string{"serve", "--help"}, exitOK, "Usage: bridge serve", true},
		{[]string{"serve", "-h"}, exitOK, "Usage: bridge serve", true},
		{[]string{"stdio", "--help"}, exitOK, "Usage: bridge stdio", true},
		{[]string{"approval-prompt", "--help"}, exitOK, "Usage: bridge approval-prompt", true},
		{[]string{"version", "--help"}, exitOK, "Usage: bridge version", true},
		{[]string{"serve", "--bogus"}, exitConfig, "Usage: bridge serve", false},
		{[]string{"stdio", "--bogus"}, exitConfig, "Usage: bridge stdio", false},
		{[]string{"approval-prompt", "--bogus"}, exitConfig, "Usage: bridge approval-prompt", false},
		{[]string{"frobnicate"}, exitConfig, "Usage:", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cleanEnv(t, nil)
			var out, errb syncbuf.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &out, &errb)
			got, other := out.String(), errb.String()
			if !tt.toOut {
				got, other = other, got
			}
			if code != tt.code || !strings.Contains(got, tt.want) || other != "" {
				t.Fatalf("exit %d (want %d); stdout %q; stderr %q", code, tt.code, out.String(), errb.String())
			}
		})
	}
}

// A ./.env (where the TypeScript bridge kept it) is not read unless named,
// and bridge serve says so instead of starting without a word about it.
func TestServeSaysLocalEnvIsNotRead(t *testing.T) {
	cleanEnv(t, map[string]string{"MCP_PATH_SECRET": "", "BRIDGE_ENV_FILE": "", "BRIDGE_LOG_FILE": "", "XDG_CONFIG_HOME": t.TempDir()})
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte("MCP_PATH_SECRET="+testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	var out, errb syncbuf.Buffer
	code := run(t.Context(), []string{"serve"}, strings.NewReader(""), &out, &errb)
	if code != exitConfig || !strings.Contains(errb.String(), filepath.Join(proj, ".env")+" is not read") || !strings.Contains(errb.String(), "bridgectl doctor --move-env") || !strings.Contains(errb.String(), "MCP_PATH_SECRET is not set") {
		t.Fatalf("serve next to an unnamed ./.env: exit %d\n%s", code, errb.String())
	}
}

func TestCommands(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.env") // its directory exists
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout string
		stderr string
	}{
		{"no args", nil, nil, exitConfig, "", "Usage:"},
		{"unknown", []string{"frobnicate"}, nil, exitConfig, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, nil, exitOK, "bridge dev", ""},
		{"help", []string{"--help"}, nil, exitOK, "bridge serve", ""},
		{"help serve", []string{"help", "serve"}, nil, exitOK, "MCP_PATH_SECRET", ""},
		{"serve --help", []string{"serve", "--help"}, nil, exitOK, "Usage: bridge serve", ""},
		{"stdio --help", []string{"stdio", "--help"}, nil, exitOK, "Usage: bridge stdio", ""},
		{"serve with an argument", []string{"serve", "extra"}, nil, exitConfig, "", "unexpected arguments"},
		{"serve without a secret", []string{"serve"}, map[string]string{"MCP_PATH_SECRET": ""}, exitConfig, "", "bridgectl secret"},
		{"serve with a short secret", []string{"serve"}, map[string]string{"MCP_PATH_SECRET": "short"}, exitConfig, "", "at least 16"},
		{"serve with a bad env file", []string{"serve", "--env", "/nonexistent/.env"}, nil, exitConfig, "", "/nonexistent/.env"},
		{"serve with a missing --env file", []string{"serve", "--env", missing}, nil, exitConfig, "",
			"env file " + missing + ": no such file — `bridgectl --env " + missing + " secret` creates it"},
		{"serve with a missing BRIDGE_ENV_FILE", []string{"serve"}, map[string]string{"BRIDGE_ENV_FILE": missing}, exitConfig, "",
			"BRIDGE_ENV_FILE=" + missing + ": no such file — `bridgectl secret` creates it"},
		{"stdio with a missing BRIDGE_ENV_FILE", []string{"stdio"}, map[string]string{"BRIDGE_ENV_FILE": missing}, exitConfig, "",
			"BRIDGE_ENV_FILE=" + missing + ": no such file — `bridgectl secret` creates it"},
		{"serve with a missing runtime root", []string{"serve"}, map[string]string{"BRIDGE_RUNTIME_ROOTS": missing, "BRIDGE_STATE_DIR": filepath.Join(t.TempDir(), "state")}, exitConfig, "",
			"BRIDGE_RUNTIME_ROOTS: " + missing},
		{"serve with a relative runtime root", []string{"serve"}, map[string]string{"BRIDGE_RUNTIME_ROOTS": "venv"}, exitConfig, "", `BRIDGE_RUNTIME_ROOTS: "venv" is not an absolute path`},
		{"bad log level", []string{"serve"}, map[string]string{"BRIDGE_LOG_LEVEL": "loud"}, exitConfig, "", "BRIDGE_LOG_LEVEL"},
		{"approval-prompt without --config", []string{"approval-prompt"}, nil, exitConfig, "", "needs --config FILE"},
		{"approval-prompt with a missing config", []string{"approval-prompt", "--config", "/nonexistent/approval.json"}, nil, exitConfig, "", "/nonexistent/approval.json"},
		{"approval-prompt --help", []string{"approval-prompt", "--help"}, nil, exitOK, "Usage: bridge approval-prompt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t, tt.env)
			var out, errb syncbuf.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("stdout %q (want %q) stderr %q (want %q)", out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
}

// TestServe runs `bridge serve` in-process until its ctx ends: it says where
// it listens on stderr (the log goes to BRIDGE_LOG_FILE), serves, and exits 0.
// (What the daemon writes to daemon.json is package daemon's test.)
func TestServe(t *testing.T) {
	dir := cleanEnv(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errR, errW := io.Pipe()
	var errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, strings.NewReader(""), io.Discard, errW)
		errW.Close()
	}()
	first := make(chan string, 1)
	copied := make(chan struct{})
	go func() { // owner: this test; ends when serve closes errW
		defer close(copied)
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if errb.Len() == 0 {
				first <- sc.Text()
			}
			errb.Write([]byte(sc.Text() + "\n"))
		}
		close(first)
	}()
	var addr string
	select {
	case line := <-first:
		var ok bool
		if addr, ok = strings.CutPrefix(line, "listening on http://"); !ok {
			t.Fatalf("stderr lacks the listening line: %q", line)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve never said where it listens")
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		<-copied
		if code != exitOK {
			t.Fatalf("exit %d after cancel: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	logs, _ := os.ReadFile(filepath.Join(dir, "bridge.log"))
	if !strings.Contains(string(logs), "DEEPSEEK_API_KEY is not set") || !strings.Contains(string(logs), "listening on") {
		t.Errorf("log lacks the key warning or the listening line:\n%s", logs)
	}
	if strings.Contains(string(logs)+errb.String(), testSecret) {
		t.Error("the secret reached the log or stderr")
	}
}

// TestStdio drives `bridge stdio` with newline-delimited JSON-RPC against a
// running daemon (`bridge serve`, in-process): every tool is offered, calls
// reach the daemon over its socket, ids come back with every digit.
func TestStdio(t *testing.T) {
	dir := cleanEnv(t, nil)
	serveCtx, stopServe := context.WithCancel(t.Context())
	served := make(chan int, 1)
	go func() { served <- run(serveCtx, []string{"serve"}, strings.NewReader(""), io.Discard, io.Discard) }()
	t.Cleanup(func() { stopServe(); <-served })
	sock := filepath.Join(dir, "state", "daemon.sock")
	if !poll.Until(15*time.Second, func() bool { return mcpsock.Ping(t.Context(), sock) == nil }) {
		t.Fatal("the daemon's socket does not answer")
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"stdio"}, inR, outW, &errb)
		outW.Close()
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	read := func(id int) map[string]any {
		t.Helper()
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("stdout is not JSON-RPC: %q", sc.Text())
			}
			if m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("no response %d; stderr %s", id, errb.String())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := read(1); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := read(2)
	b, _ := json.Marshal(list)
	var tools struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Result.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"deepseek_agent_cancel", "deepseek_agent_continue", "deepseek_agent_fetch", "deepseek_agent_list", "deepseek_agent_message", "deepseek_agent_poll", "deepseek_agent_start", "deepseek_flash", "deepseek_models", "deepseek_review"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list over stdio: %v, want %v", names, want)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"hi"}}}`)
	call := read(3)
	b, _ = json.Marshal(call)
	if !strings.Contains(string(b), `"isError":true`) || !strings.Contains(string(b), "DEEPSEEK_API_KEY") {
		t.Fatalf("flash without a key: %s", b)
	}
	// A big id comes back with every digit (mcp-go alone rounds it to a
	// float64: ...992).
	send(`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}`)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"id":9007199254740993,`) {
		t.Fatalf("big id answered as %q", sc.Text())
	}
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("stdio exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stdio did not end on EOF")
	}
	if strings.Contains(errb.String(), "starting one") {
		t.Errorf("stdio started a daemon although one ran: %s", errb.String())
	}
}

// In-process, `bridge stdio` would start this test binary as the daemon:
// nothing in these tests may run it. A test that needs the daemon started
// runs a built bridge as its own process (TestStdioStartsTheDaemonItself).
func init() {
	executable = func() (string, error) { return "/nonexistent/bridge-in-a-test", nil }
}

// With no daemon running and none that can start, bridge stdio says why and
// what to do, exits non-zero without writing to the host, and starts nothing.
func TestStdioWhenNoDaemonCanStart(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		disabled bool
		code     int // a secret is the owner's to fix: 2
		want     []string
	}{
		{"short secret", map[string]string{"MCP_PATH_SECRET": "x7q2k"}, false, exitConfig, []string{"MCP_PATH_SECRET is 5 characters", "no daemon runs for state dir"}},
		{"disabled", nil, true, exitFail, []string{"the bridge is disabled (`bridgectl disable`)", "`bridgectl enable`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cleanEnv(t, tt.env)
			state := filepath.Join(dir, "state")
			if tt.disabled {
				if err := os.MkdirAll(state, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, "disabled"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb syncbuf.Buffer
			code := run(t.Context(), []string{"stdio"}, strings.NewReader(""), &out, &errb)
			if code != tt.code || out.Len() != 0 {
				t.Fatalf("exit %d stdout %q; stderr:\n%s", code, out.String(), errb.String())
			}
			for _, want := range append([]string{"bridge stdio: no bridge daemon answers on " + filepath.Join(state, "daemon.sock"), "starting one, as `bridgectl start` does"}, tt.want...) {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errb.String())
				}
			}
			for _, f := range []string{"bridge.pid", "daemon.json", "bridge.log"} {
				if _, err := os.Stat(filepath.Join(state, f)); err == nil {
					t.Errorf("%s exists: nothing was to be started", f)
				}
			}
		})
	}
}

// bridge serve on a taken port says what to do next, as bridgectl start does.
func TestServeOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir := cleanEnv(t, map[string]string{"PORT": port})
	var out, errb syncbuf.Buffer
	code := run(t.Context(), []string{"serve"}, strings.NewReader(""), &out, &errb)
	logs, _ := os.ReadFile(filepath.Join(dir, "bridge.log"))
	for _, s := range []string{errb.String(), string(logs)} {
		if code != exitFail || !strings.Contains(s, "address already in use") || !strings.Contains(s, "sport = :"+port) || !strings.Contains(s, "PORT") {
			t.Errorf("serve on a taken port: exit %d\n%s", code, s)
		}
	}
}

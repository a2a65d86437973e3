package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func TestHelpForEveryCommand(t *testing.T) {
	te := newTestEnv(t)
	out, _, code := te.run("help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(unwrap(out), commandName(c)+" "+c.Short) {
			t.Errorf("help does not list %q with %q", commandName(c), c.Short)
		}
		t.Run(c.Name, func(t *testing.T) {
			out, errs, code := te.run(c.Name, "--help")
			if code != 0 || !strings.Contains(unwrap(out), "usage: bridgectl "+c.Usage) || !strings.Contains(out, "--env") {
				t.Fatalf("%s --help: exit %d\n%s%s", c.Name, code, out, errs)
			}
		})
	}
	if _, errs, code := te.run("frobnicate"); code != 2 || !strings.Contains(errs, "bridgectl help") {
		t.Fatalf("unknown command: exit %d, %q", code, errs)
	}
	if _, errs, code := te.run("start", "--bogus"); code != 2 || !strings.Contains(errs, "start --help") {
		t.Fatalf("unknown flag: exit %d, %q", code, errs)
	}
}

func TestScanTunnelLog(t *testing.T) {
	terms := "2026-01-01T00:00:00Z INF Thank you … Terms of Use (https://www.cloudflare.com/website-terms/) …\n"
	box := "2026-01-01T00:00:01Z INF |  https://quiet-river-amber-4f.trycloudflare.com                      |\n"
	reg := "2026-01-01T00:00:02Z INF Registered tunnel connection connIndex=0 connection=abc event=0 ip=198.41.200.13 location=ams01 protocol=quic\n"
	apiErr := `2026-01-01T00:00:01Z ERR Error requesting new quick Tunnel error="failed to request quick Tunnel: Post \"https://api.trycloudflare.com/tunnel\": EOF"` + "\n"
	edge := `2026-01-01T00:00:03Z ERR Failed to dial a quic connection error="failed to dial to edge with quic: timeout: no recent network activity" connIndex=0 event=0 ip=198.41.192.167` + "\n"
	old := "=== bridgectl tunnel 2026-01-01T00:00:00Z pid 1 ===\n" +
		"2025-12-31T00:00:01Z INF |  https://old-tunnel-name-aa.trycloudflare.com  |\n" + reg
	marker := "=== bridgectl tunnel 2026-01-01T00:00:00Z pid 2 ===\n"
	tests := []struct {
		name       string
		log        string
		url        string
		registered int
		errors     int
	}{
		{"url and registration", marker + terms + box + reg, "https://quiet-river-amber-4f.trycloudflare.com", 1, 0},
		{"only after the latest marker", old + marker + terms, "", 0, 0},
		{"new url replaces old one", old + marker + box + reg + reg, "https://quiet-river-amber-4f.trycloudflare.com", 2, 0},
		{"api host is not a tunnel", marker + terms + apiErr, "", 0, 1},
		{"edge errors, no registration", marker + box + edge + edge, "https://quiet-river-amber-4f.trycloudflare.com", 0, 2},
		{"older phrasing", marker + "INF Connection 0a1b2c3d registered connIndex=1 location=lax07\n", "", 1, 0},
		{"no marker at all", box + reg, "https://quiet-river-amber-4f.trycloudflare.com", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanTunnelLog([]byte(tt.log))
			if got.URL != tt.url || got.Registered != tt.registered || len(got.Errors) != tt.errors {
				t.Fatalf("got %+v, want url %q registered %d errors %d", got, tt.url, tt.registered, tt.errors)
			}
		})
	}
}

func TestSecretRewritesEnvKeepingEverythingElse(t *testing.T) {
	te := newTestEnv(t)
	before, _ := os.ReadFile(te.envFile)
	out := te.must("secret")
	after, _ := os.ReadFile(te.envFile)
	noSecrets(t, "secret", out)
	re := regexp.MustCompile(`(?m)^MCP_PATH_SECRET=([0-9a-f]{64})$`)
	m := re.FindStringSubmatch(string(after))
	if m == nil {
		t.Fatalf(".env has no 64-hex secret:\n%s", after)
	}
	if strings.Contains(out, m[1]) || !strings.Contains(out, m[1][:4]+"…") {
		t.Fatalf("secret output is not masked right: %q", out)
	}
	want := strings.Replace(string(before), "MCP_PATH_SECRET="+testSecret, "MCP_PATH_SECRET="+m[1], 1)
	if string(after) != want {
		t.Fatalf(".env changed beyond the secret:\n got %q\nwant %q", after, want)
	}
	out = te.must("secret", "--show")
	after, _ = os.ReadFile(te.envFile)
	m2 := re.FindStringSubmatch(string(after))
	if m2 == nil || m2[1] == m[1] || !strings.Contains(out, m2[1]) {
		t.Fatalf("secret --show: want the new secret in full, got %q", out)
	}
}

func TestStartRefusals(t *testing.T) {
	t.Run("short secret", func(t *testing.T) {
		te := newTestEnv(t, "MCP_PATH_SECRET=short")
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "at least 16") || !strings.Contains(errs, "bridgectl secret") {
			t.Fatalf("exit %d, %q", code, errs)
		}
		if _, err := os.Stat(filepath.Join(te.state, "bridge.pid")); err == nil {
			t.Fatal("a pid file was written")
		}
	})
	t.Run("port taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		te := newTestEnv(t, "PORT="+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "is taken") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		te := newTestEnv(t)
		te.must("disable")
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "bridgectl enable") {
			t.Fatalf("exit %d, %q", code, errs)
		}
		te.must("enable")
		te.must("start")
	})
	t.Run("no key only warns", func(t *testing.T) {
		te := newTestEnv(t, "DEEPSEEK_API_KEY=")
		_, errs, code := te.run("start")
		if code != 0 || !strings.Contains(errs, "DEEPSEEK_API_KEY is not set") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("already running", func(t *testing.T) {
		te := newTestEnv(t)
		te.must("start")
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "already running") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("alive but never healthy", func(t *testing.T) {
		old := daemonStartTimeout
		daemonStartTimeout = time.Second
		t.Cleanup(func() { daemonStartTimeout = old })
		hang := filepath.Join(t.TempDir(), "hanging-bridge")
		os.WriteFile(hang, []byte("#!/bin/sh\necho 'starting, but never listening'\nexec sleep 300\n"), 0o755)
		te := newTestEnv(t, "BRIDGE_BIN="+hang)
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "did not answer /health within 1s") || !strings.Contains(errs, "starting, but never listening") {
			t.Fatalf("exit %d, %q", code, errs)
		}
		if _, err := os.Stat(filepath.Join(te.state, "bridge.pid")); err == nil {
			t.Fatal("pid file left behind")
		}
		if left := te.leftovers(); len(left) > 0 {
			t.Fatalf("the hanging daemon was not killed: %v", left)
		}
	})
	t.Run("daemon exits at once", func(t *testing.T) {
		te := newTestEnv(t, "BRIDGE_BIN=/bin/false")
		_, errs, code := te.run("start")
		if code == 0 || !strings.Contains(errs, "exited during start") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
}

func TestTunnelRefusesWithoutHealth(t *testing.T) {
	te := newTestEnv(t)
	_, errs, code := te.run("tunnel")
	if code == 0 || !strings.Contains(errs, "does not answer /health") || !strings.Contains(errs, "bridgectl start") {
		t.Fatalf("exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(te.state, "tunnel.pid")); err == nil {
		t.Fatal("cloudflared was started anyway")
	}
}

func TestTunnelFailures(t *testing.T) {
	old := tunnelStartTimeout
	tunnelStartTimeout = 2 * time.Second
	t.Cleanup(func() { tunnelStartTimeout = old })
	tests := []struct {
		mode string
		want []string
	}{
		{"api-error", []string{"exited before the tunnel was up", "failed to request quick Tunnel"}},
		{"edge-error", []string{"no a registered connection", "Failed to dial a quic connection"}},
		{"no-url", []string{"no the trycloudflare URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			te := newTestEnv(t, "FAKE_CLOUDFLARED_MODE="+tt.mode)
			te.must("start")
			_, errs, code := te.run("tunnel")
			if code == 0 {
				t.Fatal("tunnel succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("error lacks %q:\n%s", w, errs)
				}
			}
			for _, f := range []string{"tunnel.pid", "tunnel.json"} {
				if _, err := os.Stat(filepath.Join(te.state, f)); err == nil {
					t.Errorf("%s left behind", f)
				}
			}
			te.must("untunnel")
			for _, p := range te.leftovers() {
				if strings.Contains(p, "tunnel") {
					t.Errorf("cloudflared left running: %s", p)
				}
			}
		})
	}
	t.Run("missing cloudflared", func(t *testing.T) {
		te := newTestEnv(t, "BRIDGE_CLOUDFLARED_BIN=")
		te.must("start")
		_, errs, code := te.run("tunnel")
		if code == 0 || !strings.Contains(errs, "cloudflared is not installed") || !strings.Contains(errs, "https://") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
}

func TestQuickTunnelLifecycleWithFakes(t *testing.T) {
	proxyFile := filepath.Join(t.TempDir(), "proxy-addr")
	clip := filepath.Join(t.TempDir(), "clipboard")
	te := newTestEnv(t, "FAKE_CLOUDFLARED_PROXY_FILE="+proxyFile, "WAYLAND_DISPLAY=wayland-test")
	// A clipboard tool that records what it was given.
	if err := os.WriteFile(filepath.Join(te.pathDir, "wl-copy"), []byte("#!/bin/sh\ncat > "+clip+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var outs []string
	out := te.must("start")
	outs = append(outs, out)
	var info statedir.DaemonInfo
	if err := json.Unmarshal([]byte(te.readFile("daemon.json")), &info); err != nil {
		t.Fatal(err)
	}
	addr := info.Addr
	if !strings.Contains(out, "started: pid "+strconv.Itoa(info.PID)) || !strings.Contains(out, "http://"+addr+"/mcp/test…") {
		t.Fatalf("start output: %q", out)
	}
	if pid := strings.TrimSpace(te.readFile("bridge.pid")); pid != strconv.Itoa(info.PID) {
		t.Fatalf("pid file %s, daemon.json pid %d", pid, info.PID)
	}
	if !strings.Contains(te.readFile("bridge.log"), "=== bridgectl start ") {
		t.Fatal("no start marker in bridge.log")
	}

	out = te.must("tunnel")
	outs = append(outs, out)
	var ti statedir.TunnelInfo
	if err := json.Unmarshal([]byte(te.readFile("tunnel.json")), &ti); err != nil {
		t.Fatal(err)
	}
	if !quickURL.MatchString(ti.URL) || ti.Origin != "http://"+addr || ti.Kind != "quick" {
		t.Fatalf("tunnel.json: %+v", ti)
	}
	if !strings.Contains(out, ti.URL+"/mcp/test…") {
		t.Fatalf("tunnel output: %q", out)
	}
	rec := filepath.Join(te.state, "tunnel.log")
	if b, _ := os.ReadFile(rec); !strings.Contains(string(b), "Registered tunnel connection") {
		t.Fatal("tunnel.log lacks the registration")
	}
	proxy := func() string { b, _ := os.ReadFile(proxyFile); return string(b) }()
	post := func(base, secret string) int {
		resp, err := http.Post("http://"+base+"/mcp/"+secret, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(proxy, testSecret); c != 200 {
		t.Fatalf("through the tunnel: %d", c)
	}

	out = te.must("status")
	outs = append(outs, out)
	for _, w := range []string{"daemon:    running, pid " + strconv.Itoa(info.PID), "tunnel:    quick, pid " + strconv.Itoa(ti.PID), ti.URL + "/mcp/test…"} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	jsonOut := te.must("status", "--json")
	outs = append(outs, jsonOut)
	var sr statusReport
	if err := json.Unmarshal([]byte(jsonOut), &sr); err != nil || sr.Daemon != "running" || sr.TunnelPID != ti.PID {
		t.Fatalf("status --json: %v %+v", err, sr)
	}

	out = te.must("reload")
	outs = append(outs, out)
	var info2 statedir.DaemonInfo
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info2)
	if info2.PID == info.PID || info2.Addr != addr {
		t.Fatalf("reload: pid %d→%d addr %s→%s (want a new pid on the same address)", info.PID, info2.PID, addr, info2.Addr)
	}
	if daemonctl.PIDAlive(info.PID) {
		t.Fatalf("old daemon pid %d still alive", info.PID)
	}
	if tp, _ := daemonctl.ReadPID(filepath.Join(te.state, "tunnel.pid")); tp != ti.PID || !daemonctl.PIDAlive(tp) {
		t.Fatalf("tunnel pid after reload: %d, want %d", tp, ti.PID)
	}

	out = te.must("rotate")
	outs = append(outs, out)
	env, _ := os.ReadFile(te.envFile)
	newSecret := regexp.MustCompile(`(?m)^MCP_PATH_SECRET=([0-9a-f]{64})$`).FindStringSubmatch(string(env))
	if newSecret == nil {
		t.Fatalf("no new secret in .env:\n%s", env)
	}
	if strings.Contains(out, newSecret[1]) || !strings.Contains(out, "old URL: 404") || !strings.Contains(out, "copied the full URL to the clipboard (wl-copy)") {
		t.Fatalf("rotate output: %q", out)
	}
	if b, _ := os.ReadFile(clip); string(b) != ti.URL+"/mcp/"+newSecret[1] {
		t.Fatalf("clipboard holds %q, want the full public URL", b)
	}
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info2)
	for _, base := range []string{addr, proxy} {
		if c := post(base, testSecret); c != 404 {
			t.Errorf("old secret via %s: %d, want 404", base, c)
		}
		if c := post(base, newSecret[1]); c != 200 {
			t.Errorf("new secret via %s: %d, want 200", base, c)
		}
	}
	if tp, _ := daemonctl.ReadPID(filepath.Join(te.state, "tunnel.pid")); tp != ti.PID || !daemonctl.PIDAlive(tp) {
		t.Fatalf("tunnel pid after rotate: %d, want %d", tp, ti.PID)
	}
	out = te.must("url", "--show")
	if !strings.Contains(out, ti.URL+"/mcp/"+newSecret[1]) {
		t.Fatalf("url --show: %q", out)
	}
	out = te.must("url")
	outs = append(outs, out)
	if strings.Contains(out, newSecret[1]) {
		t.Fatalf("url printed the secret: %q", out)
	}
	out = te.must("logs", "-n", "100")
	outs = append(outs, out)
	if !strings.Contains(out, "leaky_test_line") {
		t.Fatalf("logs did not show the daemon's lines: %q", out)
	}
	if strings.Contains(out, newSecret[1]) {
		t.Fatalf("logs printed the new secret: %q", out)
	}

	// restart: everything again; a quick tunnel comes back with a new URL.
	out = te.must("restart")
	outs = append(outs, out)
	var ti2 statedir.TunnelInfo
	json.Unmarshal([]byte(te.readFile("tunnel.json")), &ti2)
	if ti2.PID == ti.PID || ti2.URL == ti.URL || daemonctl.PIDAlive(ti.PID) || !strings.Contains(out, "public endpoint: "+ti2.URL+"/mcp/") {
		t.Fatalf("restart: tunnel %+v → %+v\n%s", ti, ti2, out)
	}
	ti = ti2

	out = te.must("stop")
	outs = append(outs, out)
	if !strings.Contains(out, "tunnel stopped (pid "+strconv.Itoa(ti.PID)+")") || !strings.Contains(out, "daemon stopped") {
		t.Fatalf("stop output: %q", out)
	}
	if left := te.leftovers(); len(left) > 0 {
		t.Fatalf("processes left after stop: %v", left)
	}
	for _, f := range []string{"bridge.pid", "tunnel.pid", "tunnel.json", "daemon.json"} {
		if _, err := os.Stat(filepath.Join(te.state, f)); err == nil {
			t.Errorf("%s left after stop", f)
		}
	}
	noSecrets(t, "lifecycle", outs...)
}

func TestStopEscalatesAndKillsTheGroup(t *testing.T) {
	old := stopGrace
	stopGrace = 500 * time.Millisecond
	t.Cleanup(func() { stopGrace = old })
	for _, tc := range []struct{ name, knob string }{
		{"ignores SIGTERM", "FAKEBRIDGE_IGNORE_TERM=1"},
		{"leaves a child in its group", "FAKEBRIDGE_CHILD=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t, tc.knob)
			te.must("start")
			if n := len(te.leftovers()); n == 0 {
				t.Fatal("nothing running after start")
			}
			out := te.must("stop")
			if !strings.Contains(out, "daemon stopped") {
				t.Fatalf("stop: %q", out)
			}
			if left := te.leftovers(); len(left) > 0 {
				t.Fatalf("left after stop: %v", left)
			}
		})
	}
}

func TestStalePIDFile(t *testing.T) {
	te := newTestEnv(t)
	os.MkdirAll(te.state, 0o700)
	// A pid that is surely not a bridge: our own (its command line has no "serve").
	os.WriteFile(filepath.Join(te.state, "bridge.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	out := te.must("status")
	if !strings.Contains(out, "daemon:    stopped") {
		t.Fatalf("status with a recycled pid: %q", out)
	}
	if out, _, _ := te.run("stop"); !strings.Contains(out, "nothing was running") {
		t.Fatalf("stop signalled a recycled pid: %q", out)
	}
	os.WriteFile(filepath.Join(te.state, "bridge.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	_, errs, code := te.run("start")
	if code != 0 || !strings.Contains(errs, "removing a stale pid file") {
		t.Fatalf("start over a stale pid file: %d %q", code, errs)
	}
}

// A daemon that dies under a live tunnel comes back on the tunnel's port.
func TestStartRejoinsALiveTunnel(t *testing.T) {
	proxyFile := filepath.Join(t.TempDir(), "proxy-addr")
	te := newTestEnv(t, "FAKE_CLOUDFLARED_PROXY_FILE="+proxyFile)
	te.must("start")
	te.must("tunnel")
	var info statedir.DaemonInfo
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info)
	te.crash(info)
	out := te.must("start")
	var info2 statedir.DaemonInfo
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info2)
	if info2.Addr != info.Addr || !strings.Contains(out, "starting on port") {
		t.Fatalf("after the crash the daemon came back on %s, not %s:\n%s", info2.Addr, info.Addr, out)
	}
	proxy, _ := os.ReadFile(proxyFile)
	resp, err := http.Post("http://"+string(proxy)+"/mcp/"+testSecret, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("through the old tunnel after restart: %v %v", resp, err)
	}
	resp.Body.Close()
}

// With a fixed PORT the tunnel's origin (a URL) matches the daemon's port, so
// reload, rotate and start must not warn that the tunnel forwards elsewhere.
func TestFixedPortTunnelNoFalsePortWarning(t *testing.T) {
	port := freePort(t)
	te := newTestEnv(t, "PORT="+strconv.Itoa(port))
	te.must("start")
	te.must("tunnel")
	for _, args := range [][]string{{"reload"}, {"rotate"}} {
		out, errs, code := te.run(args...)
		if code != 0 || strings.Contains(errs, "warning") || !strings.Contains(out, "tunnel untouched") {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", args[0], code, out, errs)
		}
	}
	var info statedir.DaemonInfo
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info)
	te.crash(info)
	out, errs, code := te.run("start")
	if code != 0 || strings.Contains(errs, "warning") || !strings.Contains(out, "listening on http://127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("start beside a live tunnel: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// After `secret` (no reload) the daemon still serves the old secret: status
// says so instead of silently showing an endpoint that answers 404.
func TestStatusNotesEnvChangedSinceStart(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	if out := te.must("status"); strings.Contains(out, "note:") {
		t.Fatalf("status right after start:\n%s", out)
	}
	// The daemon started a while ago; then a new secret is written.
	var info map[string]any
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info)
	info["started_at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(te.state, "daemon.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	te.must("secret")
	out := te.must("status")
	if !strings.Contains(out, "note:      "+te.envFile+" changed after the daemon started") || !strings.Contains(out, "`bridgectl reload`") {
		t.Fatalf("status after secret without reload:\n%s", out)
	}
	var sr statusReport
	if err := json.Unmarshal([]byte(te.must("status", "--json")), &sr); err != nil || !sr.EnvChanged {
		t.Fatalf("status --json: %v %+v", err, sr)
	}
	te.must("reload")
	if out := te.must("status"); strings.Contains(out, "note:") {
		t.Fatalf("status after reload still notes a change:\n%s", out)
	}
	noSecrets(t, "status", out)
}

// rotate with nothing running and PORT=0 writes the secret but neither prints
// nor copies an endpoint on port 0, which nothing will ever serve.
func TestRotateStoppedPortZero(t *testing.T) {
	clip := filepath.Join(t.TempDir(), "clipboard")
	te := newTestEnv(t, "WAYLAND_DISPLAY=wayland-test")
	if err := os.WriteFile(filepath.Join(te.pathDir, "wl-copy"), []byte("#!/bin/sh\ncat > "+clip+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errs, code := te.run("rotate")
	if code != 0 || !strings.Contains(out, "the daemon is not running") || !strings.Contains(out, "known once the daemon runs") || strings.Contains(out, ":0/mcp/") {
		t.Fatalf("rotate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if _, err := os.Stat(clip); err == nil {
		t.Fatal("a port-0 URL was copied to the clipboard")
	}
	env, _ := os.ReadFile(te.envFile)
	if !regexp.MustCompile(`(?m)^MCP_PATH_SECRET=[0-9a-f]{64}$`).Match(env) {
		t.Fatalf("no new secret in .env:\n%s", env)
	}
	noSecrets(t, "rotate", out, errs)
}

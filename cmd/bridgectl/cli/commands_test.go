package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

func TestJobsView(t *testing.T) {
	te := newTestEnv(t)
	dir, err := statedir.Open(te.state)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	exit1, exit0 := 1, 0
	ended := t0.Add(2 * time.Minute)
	running := jobs.Snapshot{Version: 1, ID: strings.Repeat("a", 32), Status: jobs.StatusRunning, Task: "reverse witness.txt",
		Workspace: "/srv/ws", CreatedAt: t0.Add(time.Minute), MaxSteps: 120, Steps: 2, LastTool: "Bash",
		Trace: []jobs.TraceEntry{
			{Time: t0.Add(61 * time.Second), Kind: "tool_use", Tool: "Read", Detail: "witness.txt"},
			{Time: t0.Add(62 * time.Second), Kind: "tool_use", Tool: "Bash", Detail: "./fix.sh", ExitCode: &exit1},
		}}
	done := jobs.Snapshot{Version: 1, ID: strings.Repeat("b", 32), Status: jobs.StatusDone, Task: "older task",
		Workspace: "/srv/ws", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120, Steps: 5, Result: "all good", Nonce: "n0nce",
		FilesWritten: []string{"answer.txt"}, Commands: []jobs.Command{{Command: "go test ./...", ExitCode: &exit0}}, CostUSD: 0.0123}
	for _, s := range []jobs.Snapshot{running, done} {
		if err := statedir.WriteJSON(dir.JobFile(s.ID), s); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir.Jobs(), strings.Repeat("c", 32)+".json"), []byte("{corrupt"), 0o600)

	out, errs, code := te.run("jobs")
	if code != 0 {
		t.Fatalf("jobs: %d %s", code, errs)
	}
	ls := strings.Split(strings.TrimSpace(out), "\n")
	if len(ls) != 3 || !strings.HasPrefix(ls[0], running.ID+"  running") || !strings.HasPrefix(ls[1], done.ID+"  done") {
		t.Fatalf("jobs list (newest first):\n%s", out)
	}
	// The corrupt one is listed last, plainly, with what it still says.
	if !strings.HasPrefix(ls[2], strings.Repeat("c", 32)+"  DAMAGED ") || !strings.Contains(ls[2], "nothing in it is still readable") {
		t.Fatalf("corrupt snapshot not reported: %q", ls[2])
	}
	out = te.must("jobs", running.ID, "--trace")
	for _, w := range []string{"status:     running", "steps:      2 of at most 120, last tool Bash", "tool_use    Read       witness.txt", "./fix.sh  [exit 1]"} {
		if !strings.Contains(out, w) {
			t.Errorf("jobs ID --trace lacks %q:\n%s", w, out)
		}
	}
	out = te.must("jobs", done.ID)
	for _, w := range []string{"result:     all good", "nonce:      n0nce", "wrote:      answer.txt", "ran:        exit 0   go test ./...", "cost:       $0.0123"} {
		if !strings.Contains(out, w) {
			t.Errorf("jobs ID lacks %q:\n%s", w, out)
		}
	}
	var got []jobs.Snapshot
	if err := json.Unmarshal([]byte(te.must("jobs", "--json")), &got); err != nil || len(got) != 2 || got[1].Result != "all good" {
		t.Fatalf("jobs --json: %v %+v", err, got)
	}
	out = te.must("status")
	if !strings.Contains(out, "jobs:      1 not finished") || !strings.Contains(out, running.ID) || strings.Contains(out, done.ID) {
		t.Fatalf("status jobs:\n%s", out)
	}
	if _, errs, code := te.run("jobs", "../../etc/passwd"); code == 0 || !strings.Contains(errs, "32 hex") {
		t.Fatalf("bad id: %d %q", code, errs)
	}
	if _, errs, code := te.run("jobs", strings.Repeat("d", 32)); code == 0 || !strings.Contains(errs, "expired") {
		t.Fatalf("unknown id: %d %q", code, errs)
	}
	if _, errs, code := te.run("job", "kill", running.ID); code == 0 || !strings.Contains(errs, "bridgectl start") {
		t.Fatalf("job kill without daemon: %d %q", code, errs)
	}
}

func TestAllow(t *testing.T) {
	te := newTestEnv(t)
	if _, err := statedir.Open(te.state); err != nil { // as after a first start
		t.Fatal(err)
	}
	home := te.home
	project := filepath.Join(te.dir, "projects", "demo")
	os.MkdirAll(project, 0o700)
	link := filepath.Join(te.dir, "link-to-demo")
	os.Symlink(project, link)
	tests := []struct {
		name string
		args []string
		ok   bool
		want string
	}{
		{"root", []string{"/"}, false, "a filesystem root"},
		{"home", []string{home}, false, "your home directory"},
		{"parent of home", []string{te.dir}, false, "a parent of your home directory"},
		{"/home", []string{"/home"}, false, "system-wide"},
		{"/tmp", []string{"/tmp"}, false, "refused: /tmp is"},
		{"forced /tmp still holds the state dir", []string{"/tmp", "--force"}, false, "contains the bridge's state directory"},
		{"/usr", []string{"/usr"}, false, "system-wide"},
		{"/etc", []string{"/etc"}, false, "system-wide"},
		{"/var", []string{"/var"}, false, "system-wide"},
		{"state dir itself", []string{te.state}, false, "contains the bridge's state directory"},
		{"inside the state dir", []string{filepath.Join(te.state, "jobs")}, false, "inside the bridge's state directory"},
		{"missing", []string{filepath.Join(te.dir, "nope")}, false, "must exist"},
		{"a file", []string{te.envFile}, false, "not a directory"},
		{"project via symlink", []string{link}, true, "allowed " + project},
		{"again", []string{project}, true, "already allowed"},
		{"forced broad root", []string{"/usr", "--force"}, true, "allowed /usr"},
		{"force does not allow the state dir", []string{te.state, "--force"}, false, "contains the bridge's state directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := te.run(append([]string{"allow"}, tt.args...)...)
			if (code == 0) != tt.ok || !strings.Contains(out+errs, tt.want) {
				t.Fatalf("allow %v: exit %d\n%s%s", tt.args, code, out, errs)
			}
		})
	}
	env, _ := os.ReadFile(te.envFile)
	want := "DEEPSEEK_ALLOWED_ROOTS=" + project + ":/usr\n"
	if !strings.Contains(string(env), want) || !strings.Contains(string(env), "UNKNOWN_SETTING=kept as is # with a comment\n") || !strings.Contains(string(env), "# the capability secret\n") {
		t.Fatalf(".env after allow:\n%s", env)
	}
	if out := te.must("allow"); out != project+"\n/usr\n" {
		t.Fatalf("allow (list): %q", out)
	}
	te.must("allow", "--remove", "/usr")
	if _, errs, code := te.run("allow", "--remove", "/opt/none"); code == 0 || !strings.Contains(errs, "not an allowed root") {
		t.Fatalf("remove unknown: %d %q", code, errs)
	}
	// A state dir that does not exist yet is protected all the same.
	fresh := filepath.Join(te.dir, "projects", "fresh")
	os.MkdirAll(fresh, 0o700)
	te2 := newTestEnv(t, "BRIDGE_STATE_DIR="+filepath.Join(fresh, "state"))
	if _, errs, code := te2.run("allow", fresh); code == 0 || !strings.Contains(errs, "contains the bridge's state directory") {
		t.Fatalf("allow a root around a state dir not created yet: exit %d, %q", code, errs)
	}
	// With the daemon running, allow reloads it.
	te.must("start")
	pid1 := strings.TrimSpace(te.readFile("bridge.pid"))
	out := te.must("allow", "--remove", project)
	pid2 := strings.TrimSpace(te.readFile("bridge.pid"))
	if !strings.Contains(out, "reloaded: pid "+pid2) || pid1 == pid2 {
		t.Fatalf("allow did not reload (%s → %s): %q", pid1, pid2, out)
	}
}

func TestNamedTunnelAndCheck(t *testing.T) {
	proxyFile := filepath.Join(t.TempDir(), "proxy")
	rec := filepath.Join(t.TempDir(), "record.json")
	te := newTestEnv(t, "FAKE_CLOUDFLARED_PROXY_FILE="+proxyFile, "FAKE_CLOUDFLARED_RECORD="+rec, "MCP_PATH_SECRET="+testSecret)
	if _, errs, code := te.run("tunnel", "named", "bridge.example.com"); code == 0 || !strings.Contains(errs, "no token on stdin") {
		t.Fatalf("without token: %d %q", code, errs)
	}
	if _, errs, code := te.runIn(strings.NewReader(testToken+"\n"), "tunnel", "named", "bridge.example.com"); code == 0 || !strings.Contains(errs, "does not answer /health") {
		t.Fatalf("without daemon: %d %q", code, errs)
	}
	out := te.must("start")
	var info statedir.DaemonInfo
	json.Unmarshal([]byte(te.readFile("daemon.json")), &info)
	te.environ = append(te.environ, "FAKE_CLOUDFLARED_ORIGIN=http://"+info.Addr)
	tokPath := filepath.Join(te.state, "tunnel.token")
	os.Remove(tokPath)
	out2, errs, code := te.runIn(strings.NewReader(testToken+"\n"), "tunnel", "named", "https://bridge.example.com/")
	if code != 0 {
		t.Fatalf("tunnel named: %d\n%s%s", code, out2, errs)
	}
	fi, err := os.Stat(tokPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(tokPath); strings.TrimSpace(string(b)) != testToken {
		t.Fatalf("token file holds %q", b)
	}
	if !strings.Contains(out2, "public endpoint: https://bridge.example.com/mcp/test…") {
		t.Fatalf("tunnel named output: %q", out2)
	}
	var r struct {
		Args []string
		Env  []string
	}
	b, _ := os.ReadFile(rec)
	json.Unmarshal(b, &r)
	if strings.Join(r.Args, " ") != "tunnel --no-autoupdate run --token-file "+tokPath {
		t.Fatalf("cloudflared argv: %q", r.Args)
	}
	for _, kv := range r.Env {
		if strings.HasPrefix(kv, "MCP_PATH_SECRET=") || strings.HasPrefix(kv, "DEEPSEEK_API_KEY=") {
			t.Errorf("cloudflared got %s…", kv[:18])
		}
	}
	// tunnel check: route the public URL to the fake edge's loopback proxy.
	// The start returned at the first registered connection; the fake
	// edge logs the other three a few ms apart (more under load).
	if !poll.Until(10*time.Second, func() bool {
		return strings.Count(string(daemonctl.AfterLatestMarker([]byte(te.readFile("tunnel.log")), "tunnel")), "Registered tunnel connection") >= 4
	}) {
		t.Fatalf("cloudflared never logged 4 registered connections:\n%s", te.readFile("tunnel.log"))
	}
	proxyAddr, _ := os.ReadFile(proxyFile)
	var cout, cerr bytes.Buffer
	e := NewEnv(strings.NewReader(""), &cout, &cerr, te.environ)
	e.HTTP = &http.Client{Transport: edgeTransport{host: "bridge.example.com", addr: string(proxyAddr)}}
	if code := Main(context.Background(), e, []string{"tunnel", "check"}); code != 0 {
		t.Fatalf("tunnel check: %d\n%s%s", code, cout.String(), cerr.String())
	}
	for _, w := range []string{"OK   tunnel process", "OK   edge: 4 registered connections", "OK   origin: http://" + info.Addr, "OK   public: https://bridge.example.com/health answers"} {
		if !strings.Contains(cout.String(), w) {
			t.Errorf("tunnel check lacks %q:\n%s", w, cout.String())
		}
	}
	// Without the route (the hostname leads to a closed loopback port), the
	// public check fails and says what to do for a named tunnel.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	var c2out, c2err bytes.Buffer
	e2 := NewEnv(strings.NewReader(""), &c2out, &c2err, te.environ)
	e2.HTTP = &http.Client{Transport: edgeTransport{host: "bridge.example.com", addr: deadAddr}}
	code = Main(context.Background(), e2, []string{"tunnel", "check"})
	cout2 := c2out.String()
	if code == 0 || !strings.Contains(cout2, "FAIL public: https://bridge.example.com/health") ||
		!strings.Contains(cout2, "public route in the Cloudflare dashboard points at http://"+info.Addr) || strings.Contains(cout2, "quick tunnel") {
		t.Fatalf("tunnel check without a route: %d\n%s", code, cout2)
	}
	// restart brings the named tunnel back with the same hostname and token.
	out3 := te.must("restart")
	if !strings.Contains(out3, "public endpoint: https://bridge.example.com/mcp/test…") {
		t.Fatalf("restart: %q", out3)
	}
	noSecrets(t, "named tunnel", out, out2, cout.String(), cerr.String(), cout2, out3, te.must("logs", "--tunnel"), te.must("status"))
}

// doctor names what is wrong with the harness binary: a BRIDGE_CLAUDE_BIN that
// is not there, or a pinned install whose symlink points nowhere.
func TestDoctorNamesABrokenHarness(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(filepath.Join(bin, ".cache", "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fakeBridge(t), filepath.Join(bin, "bridge")); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(bin, ".cache", "bin", "claude")
	if err := os.Symlink(filepath.Join(dir, "gone", "claude"), pinned); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		extra []string
		want  string
	}{
		{"bad BRIDGE_CLAUDE_BIN", []string{"BRIDGE_CLAUDE_BIN=" + filepath.Join(dir, "no-claude")}, "FAIL harness: BRIDGE_CLAUDE_BIN=" + filepath.Join(dir, "no-claude") + " is not an executable file"},
		{"broken pinned symlink", nil, "FAIL harness: the pinned install " + pinned + " is a broken symlink (to " + filepath.Join(dir, "gone", "claude") + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, append([]string{"BRIDGE_BIN=" + filepath.Join(bin, "bridge")}, tt.extra...)...)
			out, _, code := te.run("doctor", "--dry")
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Fatalf("doctor: exit %d, want %q in:\n%s", code, tt.want, out)
			}
		})
	}
}

// On a terminal stdin, `tunnel named` never waits for a typed token: without a
// stored one it says how to pipe it in; with one it reuses it at once.
func TestNamedTunnelTerminalStdin(t *testing.T) {
	te := newTestEnv(t, "FAKE_CLOUDFLARED_PROXY_FILE="+filepath.Join(t.TempDir(), "proxy"))
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	named := func() (string, string, int) {
		var out, errb bytes.Buffer
		e := NewEnv(tty, &out, &errb, te.environ)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		code := Main(ctx, e, []string{"tunnel", "named", "bridge.example.com"})
		return out.String(), errb.String(), code
	}
	out, errs, code := named()
	if code == 0 || !strings.Contains(errs, "stdin is a terminal") || !strings.Contains(errs, "cloudflared tunnel token NAME | bridgectl tunnel named HOST") {
		t.Fatalf("no stored token, terminal stdin: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	te.must("start")
	if _, errs, code := te.runIn(strings.NewReader(testToken+"\n"), "tunnel", "named", "bridge.example.com"); code != 0 {
		t.Fatalf("token from a pipe: exit %d: %s", code, errs)
	}
	te.must("untunnel")
	out, errs, code = named()
	if code != 0 || !strings.Contains(out, "public endpoint: https://bridge.example.com/mcp/test…") || strings.Contains(out, "token stored") {
		t.Fatalf("stored token, terminal stdin: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(te.state, "tunnel.token")); strings.TrimSpace(string(b)) != testToken {
		t.Fatalf("stored token changed to %q", b)
	}
	noSecrets(t, "tunnel named on a terminal", out, errs)
}

// edgeTransport sends requests for host to the fake edge's loopback address.
type edgeTransport struct{ host, addr string }

func (et edgeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Hostname() == et.host {
		u := *r.URL
		u.Scheme, u.Host = "http", et.addr
		r = r.Clone(r.Context())
		r.URL = &u
		r.Host = et.host
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestDoctorOnAFreshMachine(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	empty := filepath.Join(dir, "empty-path")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(empty, 0o700)
	t.Chdir(dir) // no ./.env, and BRIDGE_ENV_FILE is not set: the default .env is optional
	environ := []string{"HOME=" + home, "PATH=" + empty, "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "PORT=0"}
	var out, errb bytes.Buffer
	e := NewEnv(strings.NewReader(""), &out, &errb, environ)
	e.Exe = filepath.Join(dir, "bridgectl")
	code := Main(context.Background(), e, []string{"doctor", "--dry"})
	if code == 0 {
		t.Fatalf("doctor passed on a fresh machine:\n%s", out.String())
	}
	want := []string{
		"WARN env file: no " + filepath.Join(home, ".config", "deepseek-mcp-bridge", ".env") + " — settings come from the environment only",
		"FAIL API key: DEEPSEEK_API_KEY is not set",
		"FAIL secret: MCP_PATH_SECRET is not set: run `bridgectl secret`",
		"OK   port: PORT=0",
		"OK   state dir: " + filepath.Join(home, ".local", "state", "deepseek-mcp-bridge") + " does not exist yet",
		"FAIL bridge binary: the `bridge` binary was not found",
		"FAIL harness: Claude Code not found",
		"FAIL sandbox: bubblewrap (bwrap) is missing",
		"WARN record: no overlay without the jail",
		"WARN limits: each job: 2048 processes and threads, 4096 MiB of memory, 10240 MiB of its own files, held by the daemon's watcher over its process tree; without the jail a process that leaves the tree",
		"WARN cloudflared: cloudflared is not installed",
		"WARN allowed roots: none",
		"OK   policy floor: none (BRIDGE_POLICY_FLOOR_FILE is not set)",
		"OK   origins: browser requests are served from this machine's pages only",
		"OK   clock:",
	}
	got := out.String()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("doctor lacks %q", w)
		}
	}
	if n := strings.Count(got, "\n"); n != len(want) {
		t.Errorf("doctor printed %d lines, want one per check (%d):\n%s", n, len(want), got)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state")); err == nil {
		t.Error("doctor created the state dir")
	}
	if t.Failed() {
		t.Logf("doctor output:\n%s", got)
	}
}

func TestDoctorProbesKeyAndClock(t *testing.T) {
	tests := []struct {
		name   string
		status int
		skew   time.Duration
		want   []string
	}{
		{"accepted", 200, 0, []string{"OK   API key: present and accepted", "OK   clock: within"}},
		{"rejected", 401, 0, []string{"FAIL API key: rejected by", "(401)"}},
		{"no balance", 402, 0, []string{"FAIL API key: accepted, but the balance is insufficient"}},
		{"clock off", 200, 10 * time.Minute, []string{"FAIL clock: off by 10m", "timedatectl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotAuth string
			srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth = r.Header.Get("Authorization")
				w.Header().Set("Date", time.Now().Add(-tt.skew).UTC().Format(http.TimeFormat))
				w.WriteHeader(tt.status)
				fmt.Fprint(w, `{"object":"list","data":[]}`)
			}))
			te := newTestEnv(t, "DEEPSEEK_BASE_URL="+srv)
			out, _, _ := te.run("doctor")
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor lacks %q:\n%s", w, out)
				}
			}
			if gotAuth != "Bearer "+testKey {
				t.Errorf("probe sent Authorization %q", gotAuth)
			}
			noSecrets(t, "doctor", out)
		})
	}
}

func newLoopbackServer(t *testing.T, h http.Handler) string {
	srv := &http.Server{Handler: h}
	ln, err := (&netListenConfig{}).listen()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestEveryCommandMasks runs each command (including failing ones) against a
// running daemon and tunnel and greps all output for the secret, the key and
// the tunnel token.
func TestEveryCommandMasks(t *testing.T) {
	te := newTestEnv(t)
	os.WriteFile(filepath.Join(te.state+"-token"), nil, 0o600)
	te.must("start")
	if _, errs, code := te.runIn(strings.NewReader(testToken), "tunnel", "named", "bridge.example.com"); code != 0 {
		t.Fatalf("tunnel named: %s", errs)
	}
	// Put every secret into the logs, as a careless line would.
	f, _ := os.OpenFile(filepath.Join(te.state, "tunnel.log"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "INF token=%s secret=%s key=%s\n", testToken, testSecret, testKey)
	f.Close()
	runs := [][]string{
		{"status"}, {"status", "--json"}, {"url"}, {"logs"}, {"logs", "--tunnel"}, {"logs", "-n", "1000"},
		{"tunnel"}, {"tunnel", "check"}, {"start"}, {"smoke", "--no-flash"},
		{"smoke", "http://127.0.0.1:1/mcp/" + testSecret}, {"doctor", "--dry"}, {"jobs"}, {"allow"},
		{"allow", "/"}, {"job", "kill", strings.Repeat("a", 32)}, {"secret"}, {"url"}, {"reload"}, {"rotate"},
		{"restart"}, {"help"}, {"stop"}, {"uninstall"},
	}
	secretNow := regexp.MustCompile(`(?m)^MCP_PATH_SECRET=(\S+)$`)
	for _, args := range runs {
		out, errs, _ := te.run(args...)
		noSecrets(t, "bridgectl "+strings.Join(args, " "), out, errs)
		env, _ := os.ReadFile(te.envFile)
		if m := secretNow.FindStringSubmatch(string(env)); m == nil {
			t.Fatalf("no secret in .env after %v", args)
		} else if strings.Contains(out+errs, m[1]) {
			t.Errorf("bridgectl %s printed the current secret:\n%s%s", strings.Join(args, " "), out, errs)
		}
	}
}

func TestLogsFollow(t *testing.T) {
	te := newTestEnv(t)
	log := filepath.Join(te.state, "bridge.log")
	os.MkdirAll(te.state, 0o700)
	os.WriteFile(log, []byte("old line\n"), 0o600)
	pr, pw := ioPipe()
	ctx, cancel := context.WithCancel(context.Background())
	e := NewEnv(strings.NewReader(""), pw, &bytes.Buffer{}, te.environ)
	done := make(chan int)
	go func() { done <- Main(ctx, e, []string{"logs", "-f", "-n", "1"}); pw.Close() }()
	lines := make(chan string)
	go func() {
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := pr.Read(buf)
			acc += string(buf[:n])
			for strings.Contains(acc, "\n") {
				l, rest, _ := strings.Cut(acc, "\n")
				lines <- l
				acc = rest
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	if l := <-lines; l != "old line" {
		t.Fatalf("first line %q", l)
	}
	f, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "new line with /mcp/%s in it\n", testSecret)
	f.Close()
	if l := <-lines; l != "new line with /mcp/test… in it" {
		t.Fatalf("followed line %q", l)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("logs -f exit %d", code)
	}
}

func TestUninstallPurge(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	out := te.must("uninstall")
	if _, err := os.Stat(filepath.Join(te.state, "bridge.log")); err == nil {
		t.Fatal("uninstall kept the log")
	}
	if _, err := os.Stat(filepath.Join(te.state, "jobs")); err != nil {
		t.Fatal("uninstall without --purge removed jobs")
	}
	te.must("uninstall", "--purge")
	if _, err := os.Stat(te.state); err == nil {
		t.Fatal("--purge kept the state dir")
	}
	if _, err := os.Stat(te.envFile); err != nil {
		t.Fatal("uninstall removed .env")
	}
	if !strings.Contains(out, "kept "+te.envFile) {
		t.Fatalf("uninstall output: %q", out)
	}
	_ = url.URL{}

	// A state dir that also holds the .env file (or anything else the bridge
	// did not make) is not purged: nothing is removed and the error names it.
	te2 := newTestEnv(t)
	if err := os.MkdirAll(te2.state, 0o700); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(te2.state, "bridge.env")
	envBytes, _ := os.ReadFile(te2.envFile)
	if err := os.WriteFile(inside, envBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	te2.environ = append(te2.environ, "BRIDGE_ENV_FILE="+inside)
	te2.must("start")
	out2, errs2, code := te2.run("uninstall", "--purge")
	if code == 0 || !strings.Contains(errs2, "also holds bridge.env") || strings.Contains(out2, "removed the state directory") {
		t.Fatalf("uninstall --purge with .env inside the state dir: exit %d\nstdout:\n%s\nstderr:\n%s", code, out2, errs2)
	}
	if b, err := os.ReadFile(inside); err != nil || !bytes.Equal(b, envBytes) {
		t.Fatalf(".env inside the state dir after a refused purge: %v", err)
	}
	if _, err := os.Stat(filepath.Join(te2.state, "jobs")); err != nil {
		t.Fatalf("a refused purge removed jobs: %v", err)
	}
	if left := te2.leftovers(); len(left) > 0 {
		t.Fatalf("a refused purge left processes running: %v", left)
	}
	noSecrets(t, "uninstall --purge refused", out2, errs2)
}

// TestDoctorMasksBaseURLUserinfo: a DEEPSEEK_BASE_URL with credentials in its
// userinfo is printed with the userinfo masked and scheme, host and path kept,
// whether the API answers or cannot be reached.
func TestDoctorMasksBaseURLUserinfo(t *testing.T) {
	const user, pass = "proxyuser", "proxy-pass-0123456789"
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"object":"list","data":[]}`)
	}))
	host := strings.TrimPrefix(srv, "http://")
	tests := []struct {
		name, base, want string
	}{
		{"answers", "http://" + user + ":" + pass + "@" + host + "/v1", "OK   API key: present and accepted by http://prox…@" + host + "/v1"},
		{"unreachable", "http://" + user + ":" + pass + "@127.0.0.1:1/v1", "FAIL API key: cannot reach http://prox…@127.0.0.1:1/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t, "DEEPSEEK_BASE_URL="+tt.base)
			out, errs, _ := te.run("doctor")
			if !strings.Contains(out, tt.want) {
				t.Errorf("doctor lacks %q:\n%s", tt.want, out)
			}
			for _, s := range []string{user, pass} {
				if strings.Contains(out+errs, s) {
					t.Errorf("doctor printed the base URL's userinfo (%s):\n%s%s", s, out, errs)
				}
			}
		})
	}
}

// TestReadOnlyCommandsCreateNothing: on a machine where the bridge never ran
// (BRIDGE_STATE_DIR names a directory that does not exist), the commands that
// only look answer truthfully and leave the filesystem as it was: no state
// dir, no log, no .env change.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	id := strings.Repeat("ab", 16)
	tests := []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"status"}, 0, "(does not exist: the bridge has not run with this state dir; `bridgectl start` creates it)"},
		{[]string{"status", "--json"}, 0, `"state_dir_missing": true`},
		{[]string{"url"}, 0, "(daemon not running)"},
		{[]string{"logs"}, 0, "not running; no state dir at "},
		{[]string{"logs", "--tunnel"}, 0, "not running; no state dir at "},
		{[]string{"jobs"}, 0, "no jobs: no state dir at "},
		{[]string{"jobs", "--json"}, 0, "[]"},
		{[]string{"jobs", id}, 1, "it never existed"},
		{[]string{"pending"}, 0, "no pending approval requests: no state dir at "},
		{[]string{"pending", "--json"}, 0, "[]"},
		{[]string{"audit"}, 0, "no audit log: no state dir at "},
		{[]string{"audit", "--json"}, 0, "[]"},
		{[]string{"approval"}, 0, "human approval is on"},
		{[]string{"approval", "on"}, 0, "the approval-off flag was not set"},
		{[]string{"approve", id}, 1, "no approval request"},
		{[]string{"deny", id}, 1, "no approval request"},
		{[]string{"approve", "--watch"}, 0, "note: no state dir at "}, // stdin is at its end: the watch stops at once
		{[]string{"job", "kill", id}, 1, "does not answer"},
		{[]string{"doctor", "--dry"}, 1, "does not exist yet"},
		{[]string{"stop"}, 0, "nothing was running"},
		{[]string{"untunnel"}, 0, "no tunnel was running"},
		{[]string{"tunnel", "check"}, 1, "no tunnel is running"},
		{[]string{"enable"}, 0, "already enabled"},
		{[]string{"allow"}, 0, "no allowed roots"},
		{[]string{"reload"}, 1, "not running"},
		{[]string{"uninstall"}, 0, "nothing to remove: no state dir at "},
		{[]string{"uninstall", "--purge"}, 0, "nothing to remove: no state dir at "},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			never := filepath.Join(t.TempDir(), "never-ran")
			state := filepath.Join(never, "state")
			te := newTestEnv(t, "BRIDGE_STATE_DIR="+state)
			before := treeOf(t, te.dir)
			out, errs, code := te.run(tt.args...)
			if code != tt.code || !strings.Contains(out+errs, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, out, errs)
			}
			if strings.Contains(tt.want, "no state dir at ") && !strings.Contains(out, state) {
				t.Errorf("output does not name the state dir %s:\n%s", state, out)
			}
			if _, err := os.Stat(never); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("bridgectl %s created %s (stat: %v)", strings.Join(tt.args, " "), never, err)
			}
			if after := treeOf(t, te.dir); after != before {
				t.Errorf("bridgectl %s changed files:\nbefore:\n%s\nafter:\n%s", strings.Join(tt.args, " "), before, after)
			}
		})
	}
}

// treeOf lists every file under root with its size and mtime.
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWritersCreateTheStateDir: the commands that write into the state dir
// still create it (mode 0700) on a machine where the bridge never ran.
func TestWritersCreateTheStateDir(t *testing.T) {
	tests := []struct {
		args []string
		file func(statedir.Dir) string
	}{
		{[]string{"disable"}, statedir.Dir.DisabledFlag},
		{[]string{"approval", "off"}, statedir.Dir.ApprovalOffFlag},
		{[]string{"start"}, statedir.Dir.DaemonInfoFile},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "never-ran", "state")
			te := newTestEnv(t, "BRIDGE_STATE_DIR="+state)
			te.must(tt.args...)
			fi, err := os.Stat(state)
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("state dir after %v: %v, %v (want mode 0700)", tt.args, fi, err)
			}
			if _, err := os.Stat(tt.file(statedir.Dir{Root: state})); err != nil {
				t.Errorf("%v wrote no file: %v", tt.args, err)
			}
		})
	}
}

// TestRotateClipboardFailures: a clipboard tool that exists but fails is
// named with how it failed, and the output says the URL was not copied; a
// later tool that works still gets the URL.
func TestRotateClipboardFailures(t *testing.T) {
	const failing = "#!/bin/sh\ncat >/dev/null\necho 'Failed to connect to a Wayland server' >&2\necho 'second line' >&2\nexit 1\n"
	const silent = "#!/bin/sh\ncat >/dev/null\nexit 3\n"
	tests := []struct {
		name    string
		tools   map[string]string // name → script; "" records stdin in the clipboard file
		env     []string
		want    []string
		copied  bool
		notWant string
	}{
		{"failing tool", map[string]string{"wl-copy": failing}, []string{"WAYLAND_DISPLAY=wayland-test"},
			[]string{"the URL was NOT copied to the clipboard: wl-copy failed (exit status 1: Failed to connect to a Wayland server)", "`bridgectl url --show` prints the full URL"}, false, "second line"},
		{"silent failure", map[string]string{"wl-copy": silent}, []string{"WAYLAND_DISPLAY=wayland-test"},
			[]string{"the URL was NOT copied to the clipboard: wl-copy failed (exit status 3)"}, false, "no clipboard tool"},
		{"two failing tools", map[string]string{"wl-copy": failing, "xclip": silent}, []string{"WAYLAND_DISPLAY=wayland-test", "DISPLAY=:0"},
			[]string{"wl-copy failed (exit status 1: Failed to connect to a Wayland server); xclip failed (exit status 3)"}, false, ""},
		{"a later tool works", map[string]string{"wl-copy": failing, "xclip": ""}, []string{"WAYLAND_DISPLAY=wayland-test", "DISPLAY=:0"},
			[]string{"copied the full URL to the clipboard (xclip)"}, true, "NOT copied"},
		{"no tool", nil, []string{"WAYLAND_DISPLAY=wayland-test"},
			[]string{"the URL was NOT copied to the clipboard: no clipboard tool found (wl-copy, xclip, pbcopy, clip.exe)"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clip := filepath.Join(t.TempDir(), "clipboard")
			te := newTestEnv(t, append([]string{"PORT=1"}, tt.env...)...)
			for name, script := range tt.tools {
				if script == "" {
					script = "#!/bin/sh\ncat > " + clip + "\n"
				}
				if err := os.WriteFile(filepath.Join(te.pathDir, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out, errs, code := te.run("rotate")
			if code != 0 {
				t.Fatalf("rotate: exit %d\n%s%s", code, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("rotate output lacks %q:\n%s", w, out)
				}
			}
			if tt.notWant != "" && strings.Contains(out+errs, tt.notWant) {
				t.Errorf("rotate output has %q:\n%s%s", tt.notWant, out, errs)
			}
			b, err := os.ReadFile(clip)
			if tt.copied != (err == nil) || (tt.copied && !strings.HasPrefix(string(b), "http://127.0.0.1:1/mcp/")) {
				t.Errorf("clipboard: %q, %v (want copied: %v)", b, err, tt.copied)
			}
			noSecrets(t, "rotate", out, errs)
		})
	}
}

// TestClipboardToolThatStaysBehind: wl-copy and xclip leave a child that holds
// the clipboard and inherits their stdout and stderr; rotate must not wait for it.
func TestClipboardToolThatStaysBehind(t *testing.T) {
	te := newTestEnv(t, "PORT=1", "WAYLAND_DISPLAY=wayland-test")
	release, done := filepath.Join(te.dir, "release"), filepath.Join(te.dir, "done")
	for _, f := range []string{release, done} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\ncat >/dev/null\n(read x < " + release + "; echo bye > " + done + ") &\nexit 0\n"
	if err := os.WriteFile(filepath.Join(te.pathDir, "wl-copy"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out, errs string
		code      int
	}
	ch := make(chan result, 1)
	go func() { out, errs, code := te.run("rotate"); ch <- result{out, errs, code} }()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	returned := false
	select {
	case r := <-ch:
		returned = true
		if r.code != 0 || !strings.Contains(r.out, "copied the full URL to the clipboard (wl-copy)") {
			t.Errorf("rotate: exit %d\n%s%s", r.code, r.out, r.errs)
		}
	case <-limit.C:
		t.Error("rotate waited for the clipboard tool's child")
	}
	// Let the child go and wait until it has.
	w, err := os.OpenFile(release, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(w, "go")
	w.Close()
	if b, err := os.ReadFile(done); err != nil || string(b) != "bye\n" {
		t.Fatalf("the child did not finish: %q, %v", b, err)
	}
	if !returned {
		<-ch // the child is gone, so rotate returns now
	}
	// The child exits just after its write, so the cleanup's leftover check
	// could catch it in between. Another process exits: nothing to wait on
	// but its absence, so poll, bounded.
	var left []string
	if !poll.Until(10*time.Second, func() bool { left = te.leftovers(); return len(left) == 0 }) {
		t.Fatalf("the clipboard tool's child did not exit: %v", left)
	}
}

// TestNamedEnvFileMissing: a .env file named by BRIDGE_ENV_FILE or --env that
// does not exist makes the commands that read config refuse, naming the path
// and how to create it; doctor reports it as one FAIL; secret, rotate and
// allow create it.
func TestNamedEnvFileMissing(t *testing.T) {
	tests := []struct {
		args   []string
		global bool // the file is named by --env, not BRIDGE_ENV_FILE
		code   int
		want   string // with PATH for the missing file; in stdout+stderr
		makes  string // a line the created file must hold ("" = not created)
	}{
		{[]string{"status"}, false, 1, "BRIDGE_ENV_FILE=PATH: no such file — `bridgectl secret` creates it", ""},
		{[]string{"start"}, false, 1, "BRIDGE_ENV_FILE=PATH: no such file — `bridgectl secret` creates it", ""},
		{[]string{"url"}, false, 1, "BRIDGE_ENV_FILE=PATH: no such file", ""},
		{[]string{"stop"}, false, 1, "BRIDGE_ENV_FILE=PATH: no such file", ""},
		{[]string{"jobs"}, false, 1, "BRIDGE_ENV_FILE=PATH: no such file", ""},
		{[]string{"status"}, true, 1, "env file PATH: no such file — `bridgectl --env PATH secret` creates it", ""},
		{[]string{"doctor", "--dry"}, false, 1, "FAIL env file: BRIDGE_ENV_FILE=PATH: no such file — `bridgectl secret` creates it", ""},
		{[]string{"secret"}, false, 0, "new secret written to PATH", "MCP_PATH_SECRET="},
		{[]string{"secret"}, true, 0, "new secret written to PATH", "MCP_PATH_SECRET="},
		{[]string{"rotate"}, false, 0, "new secret written to PATH", "MCP_PATH_SECRET="},
		{[]string{"allow", "ROOT"}, false, 0, "(DEEPSEEK_ALLOWED_ROOTS in PATH)", "DEEPSEEK_ALLOWED_ROOTS="},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		if tt.global {
			name = "--env " + name
		}
		t.Run(name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "missing.env")
			root := filepath.Join(t.TempDir(), "project")
			os.MkdirAll(root, 0o700)
			te := newTestEnv(t, "BRIDGE_STATE_DIR="+filepath.Join(t.TempDir(), "state"), "MCP_PATH_SECRET="+testSecret)
			args := tt.args
			if tt.global {
				args = append([]string{"--env", missing}, args...)
			} else {
				te.environ = append(te.environ, "BRIDGE_ENV_FILE="+missing)
			}
			for i, a := range args {
				if a == "ROOT" {
					args[i] = root
				}
			}
			if tt.makes == "MCP_PATH_SECRET=" {
				// The environment's secret would win over the new one in the file.
				te.environ = slices.DeleteFunc(te.environ, func(v string) bool { return strings.HasPrefix(v, "MCP_PATH_SECRET=") })
			}
			out, errs, code := te.run(args...)
			want := strings.ReplaceAll(tt.want, "PATH", missing)
			if code != tt.code || !strings.Contains(out+errs, want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\nstdout:\n%s\nstderr:\n%s", code, tt.code, want, out, errs)
			}
			b, err := os.ReadFile(missing)
			switch {
			case tt.makes == "" && err == nil:
				t.Errorf("bridgectl %s created %s", name, missing)
			case tt.makes != "" && !strings.Contains(string(b), "\n"+tt.makes) && !strings.HasPrefix(string(b), tt.makes):
				t.Errorf("bridgectl %s: %s holds %q (%v), want a %s line", name, missing, b, err, tt.makes)
			case tt.makes != "":
				if fi, _ := os.Stat(missing); fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %o, want 600", missing, fi.Mode().Perm())
				}
			}
			noSecrets(t, name, out, errs)
		})
	}
}

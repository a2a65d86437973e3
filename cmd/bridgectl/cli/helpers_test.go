package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

const (
	testSecret = "test-secret-0123456789abcdef"
	testKey    = "sk-test-double-key"
	testToken  = "test-tunnel-token-eyJhIjoiZmFrZSJ9-0123456789"
)

func TestMain(m *testing.M) {
	// The fake clipboard tools answer at once, but on two loaded cores a
	// shell script can wait past 5 s to run: a bound is not what these
	// tests measure.
	clipboardTimeout = 2 * time.Minute
	os.Exit(testenv.Main(m))
}

// fakeBridge is the built stand-in for `bridge serve`, fakeCloudflared the
// one for cloudflared (testenv.Binary: built once per test process).
func fakeBridge(t testing.TB) string {
	return testenv.Binary(t, "./cmd/bridgectl/internal/fakebridge")
}

func fakeCloudflared(t testing.TB) string {
	return testenv.Binary(t, "./cmd/bridgectl/internal/fakecloudflared")
}

// testEnv is one isolated bridgectl world: its own .env, state dir, HOME and PATH.
type testEnv struct {
	t       *testing.T
	dir     string
	envFile string
	state   string
	home    string
	pathDir string // on PATH: fake tools (clipboard, …)
	marker  string // in every child's environment, to find leftovers in /proc
	environ []string
}

func newTestEnv(t *testing.T, extra ...string) *testEnv {
	t.Helper()
	dir := t.TempDir()
	te := &testEnv{t: t, dir: dir, envFile: filepath.Join(dir, "bridge.env"), state: filepath.Join(dir, "state"),
		home: filepath.Join(dir, "home"), pathDir: filepath.Join(dir, "path")}
	for _, d := range []string{te.home, te.pathDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	suffix, err := ids.Hex(8)
	if err != nil {
		t.Fatal(err)
	}
	te.marker = "bridgectl-test-" + suffix
	env := "# bridge settings for a test\n" +
		"DEEPSEEK_API_KEY=" + testKey + "\n" +
		"# the capability secret\n" +
		"MCP_PATH_SECRET=" + testSecret + "\n" +
		"HOST=127.0.0.1\nPORT=0\n" +
		"BRIDGE_STATE_DIR=" + te.state + "\n" +
		"UNKNOWN_SETTING=kept as is # with a comment\n"
	if err := os.WriteFile(te.envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	te.environ = []string{
		"PATH=" + te.pathDir + string(os.PathListSeparator) + "/usr/bin" + string(os.PathListSeparator) + "/bin",
		"HOME=" + te.home,
		"BRIDGE_ENV_FILE=" + te.envFile,
		"BRIDGE_BIN=" + fakeBridge(t),
		"BRIDGE_CLOUDFLARED_BIN=" + fakeCloudflared(t),
		"BRIDGECTL_TEST_MARKER=" + te.marker,
		"FAKE_CLOUDFLARED_DELAY_MS=5",
	}
	te.environ = append(te.environ, extra...)
	t.Cleanup(func() {
		// Whatever a test left running: stop it, then prove nothing remains.
		te.run("stop")
		if left := te.leftovers(); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})
	return te
}

// run runs bridgectl in-process and returns stdout, stderr and the exit code.
func (te *testEnv) run(args ...string) (string, string, int) {
	return te.runIn(strings.NewReader(""), args...)
}

func (te *testEnv) runIn(stdin *strings.Reader, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	e := NewEnv(stdin, &out, &errb, te.environ)
	e.Exe = filepath.Join(te.dir, "no-such-bridgectl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Main(ctx, e, args)
	return out.String(), errb.String(), code
}

// must runs a command that has to succeed.
func (te *testEnv) must(args ...string) string {
	te.t.Helper()
	out, errs, code := te.run(args...)
	if code != 0 {
		te.t.Fatalf("bridgectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// leftovers lists live processes (not zombies) whose environment carries the marker.
func (te *testEnv) leftovers() []string {
	return procsWith(te.marker)
}

func procsWith(marker string) []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid := d.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue // exited; only its exit status waits to be collected
		}
		cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		left = append(left, pid+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return left
}

func (te *testEnv) readFile(rel string) string {
	b, err := os.ReadFile(filepath.Join(te.state, rel))
	if err != nil {
		te.t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

// noSecrets fails if any secret appears in the outputs.
func noSecrets(t *testing.T, what string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		for _, s := range []string{testSecret, testKey, testToken} {
			if strings.Contains(o, s) {
				t.Errorf("%s printed a secret (%s…):\n%s", what, s[:8], o)
			}
		}
	}
}

type netListenConfig struct{}

func (netListenConfig) listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// appendEnv adds lines to the test's .env file.
func (te *testEnv) appendEnv(lines ...string) {
	te.t.Helper()
	f, err := os.OpenFile(te.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		te.t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			te.t.Fatal(err)
		}
	}
}

// dropEnvLine removes every line of the .env file that starts with prefix.
func (te *testEnv) dropEnvLine(prefix string) {
	te.t.Helper()
	b, err := os.ReadFile(te.envFile)
	if err != nil {
		te.t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, prefix) {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(te.envFile, []byte(strings.Join(kept, "")), 0o600); err != nil {
		te.t.Fatal(err)
	}
}

// backdateStart makes the running daemon's daemon.json say it started a
// minute ago, so a .env written now is newer than the daemon.
func (te *testEnv) backdateStart() {
	te.t.Helper()
	var info map[string]any
	if err := json.Unmarshal([]byte(te.readFile("daemon.json")), &info); err != nil {
		te.t.Fatal(err)
	}
	info["started_at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(te.state, "daemon.json"), b, 0o600); err != nil {
		te.t.Fatal(err)
	}
}

// writeJobs puts snapshots into the test's state dir.
func (te *testEnv) writeJobs(snaps ...jobs.Snapshot) statedir.Dir {
	te.t.Helper()
	dir, err := statedir.Open(te.state)
	if err != nil {
		te.t.Fatal(err)
	}
	for _, s := range snaps {
		if err := statedir.WriteJSON(dir.JobFile(s.ID), s); err != nil {
			te.t.Fatal(err)
		}
	}
	return dir
}

// daemonPID is the pid the daemon's daemon.json records (0: none).
func (te *testEnv) daemonPID() int {
	te.t.Helper()
	var info statedir.DaemonInfo
	if statedir.ReadJSON(filepath.Join(te.state, "daemon.json"), &info) != nil {
		return 0
	}
	return info.PID
}

// jobStatus is the status a job's snapshot reads now.
func (te *testEnv) jobStatus(id string) jobs.Status {
	te.t.Helper()
	var s jobs.Snapshot
	b, err := os.ReadFile(filepath.Join(te.state, "jobs", id+".json"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		te.t.Fatalf("read job %s: %v", id, err)
	}
	return s.Status
}

// crash SIGKILLs the daemon daemon.json describes, and returns once its
// lock is free: a Go process's other threads may still hold the lock's file
// a moment after its leader is gone, and a start after a real crash comes
// later than that.
func (te *testEnv) crash(info statedir.DaemonInfo) {
	te.t.Helper()
	if err := daemonctl.StopProcess(te.t.Context(), info.Process(), 0); err != nil {
		te.t.Fatal(err)
	}
	dir := statedir.Dir{Root: te.state}
	if !poll.Until(5*time.Second, func() bool { h, err := dir.LockHolder(); return err == nil && h == 0 }) {
		te.t.Fatalf("the state dir's lock is still held after the daemon (pid %d) was killed", info.PID)
	}
}

// freePort is a loopback port that was free a moment ago (for a fixed PORT).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

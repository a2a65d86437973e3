package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/heapwatch"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

const (
	initLine   = `{"type":"system","subtype":"init","session_id":"s1","model":"deepseek-flash"}`
	bashLine   = `{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"output_tokens":2}}}`
	resultLine = `{"type":"result","subtype":"success","is_error":false,"result":"the answer","num_turns":2,"session_id":"s1","usage":{"input_tokens":10,"output_tokens":2}}`
)

// fakeClaude writes a shell script standing in for the claude binary: it
// saves argv and its first stdin line in the working directory, then runs body.
func fakeClaude(t *testing.T, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell-script harness double needs a unix shell")
	}
	p := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > argv.txt\nIFS= read -r task\nprintf '%s\\n' \"$task\" > stdin.txt\n" + body + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func testSpec(t *testing.T, id string) Spec {
	return Spec{
		JobID:     id,
		Task:      "reverse the witness\nand write it",
		Workspace: t.TempDir(),
		ConfigDir: filepath.Join(t.TempDir(), id),
		BaseURL:   "http://127.0.0.1:9/anthropic",
		Token:     "sk-test-double-key",
		Model:     "deepseek-flash",
	}
}

func collect(t *testing.T, r Run, limit time.Duration) ([]Event, Exit) {
	t.Helper()
	var evs []Event
	timeout := time.After(limit)
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				return evs, r.Wait()
			}
			evs = append(evs, ev)
		case <-timeout:
			r.Stop()
			t.Fatalf("run did not end within %v (events so far: %d)", limit, len(evs))
		}
	}
}

func assertTreeGone(t *testing.T, jobID string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	// A SIGKILLed process vanishes asynchronously (its parent or init reaps it).
	var pids []int
	if !poll.Until(2*time.Second, func() bool {
		pids = JobProcesses(jobID)
		return len(pids) == 0
	}) {
		KillJobProcesses(jobID)
		t.Fatalf("processes of job %s still alive: %v", jobID, pids)
	}
}

func TestClaudeCodeRunDeliversEventsAndClosesStdin(t *testing.T) {
	// The double only exits when stdin closes, like the real harness with
	// stream-json input: the run must close stdin once the result line is read.
	bin := fakeClaude(t, "echo '"+initLine+"'\necho '"+bashLine+"'\necho '"+resultLine+"'\nwhile IFS= read -r more; do :; done\nexit 0")
	c := &ClaudeCode{Bin: bin, Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-events")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 10*time.Second)
	kinds := []Kind{}
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	want := []Kind{KindInit, KindUsage, KindToolUse, KindResult}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	if exit.Code != 0 || exit.Stopped || exit.Err != nil {
		t.Errorf("exit = %+v", exit)
	}
	stdin, err := os.ReadFile(filepath.Join(spec.Workspace, "stdin.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Type    string `json:"type"`
		Message struct{ Role, Content string }
	}
	if err := json.Unmarshal(stdin, &msg); err != nil || msg.Type != "user" || msg.Message.Content != spec.Task {
		t.Errorf("stdin = %s (%v)", stdin, err)
	}
	argv, _ := os.ReadFile(filepath.Join(spec.Workspace, "argv.txt"))
	if strings.Contains(string(argv), "witness") {
		t.Errorf("task leaked into argv: %s", argv)
	}
	for _, a := range []string{"-p", "stream-json", "--verbose", "--input-format", "acceptEdits", "--strict-mcp-config"} {
		if !strings.Contains(string(argv), a+"\n") {
			t.Errorf("argv lacks %s: %s", a, argv)
		}
	}
	st, err := os.Stat(spec.ConfigDir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("config dir = %v %v", st, err)
	}
	assertTreeGone(t, spec.JobID)
}

func TestClaudeCodeStopKillsTheWholeGroup(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		// a child in the background and the leader blocked on it
		{"children", "sleep 300 &\nsleep 300 &\necho '" + initLine + "'\nwait"},
		// a leader that ignores SIGTERM gets SIGKILL after the grace
		{"ignores SIGTERM", "trap '' TERM\nsleep 300 &\necho '" + initLine + "'\nwhile :; do sleep 1; done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &ClaudeCode{Bin: fakeClaude(t, tt.body), Environ: []string{"PATH=" + os.Getenv("PATH")}, StopGrace: 300 * time.Millisecond}
			spec := testSpec(t, "job-stop-"+strings.ReplaceAll(tt.name, " ", "-"))
			r, err := c.Start(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			ev := <-r.Events() // the init line: the tree is up
			if ev.Kind != KindInit {
				t.Fatalf("first event %v", ev.Kind)
			}
			// A child forked just before the init line may still be between
			// fork and exec, its environ unreadable for a moment.
			if runtime.GOOS == "linux" && !poll.Until(5*time.Second, func() bool { return len(JobProcesses(spec.JobID)) >= 2 }) {
				t.Fatalf("expected the tree to be visible, got %v", JobProcesses(spec.JobID))
			}
			r.Stop()
			_, exit := collect(t, r, 10*time.Second)
			if !exit.Stopped || exit.Signal == "" {
				t.Errorf("exit = %+v, want stopped by a signal", exit)
			}
			assertTreeGone(t, spec.JobID)
		})
	}
}

func TestClaudeCodeLeftoversDieWithTheRun(t *testing.T) {
	// A background command that outlives the harness (and holds its stdout)
	// must neither keep the run alive nor survive it.
	body := "sleep 300 &\necho '" + initLine + "'\necho '" + resultLine + "'\nexit 0"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-leftover")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 10*time.Second)
	if len(evs) != 2 || exit.Code != 0 || exit.Stopped {
		t.Fatalf("events %d exit %+v", len(evs), exit)
	}
	assertTreeGone(t, spec.JobID)
}

func TestClaudeCodeContextEndStopsRun(t *testing.T) {
	c := &ClaudeCode{Bin: fakeClaude(t, "echo '"+initLine+"'\nsleep 300"), Environ: []string{"PATH=" + os.Getenv("PATH")}, StopGrace: time.Second}
	spec := testSpec(t, "job-ctx")
	ctx, cancel := context.WithCancel(t.Context())
	r, err := c.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	<-r.Events()
	cancel()
	_, exit := collect(t, r, 10*time.Second)
	if !exit.Stopped {
		t.Errorf("exit = %+v", exit)
	}
	assertTreeGone(t, spec.JobID)
}

func TestClaudeCodeStderrIsBounded(t *testing.T) {
	body := "i=0; while [ $i -lt 2000 ]; do echo 'noise noise noise noise noise noise' >&2; i=$((i+1)); done\necho 'LAST LINE' >&2\nexit 3"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	r, err := c.Start(t.Context(), testSpec(t, "job-stderr"))
	if err != nil {
		t.Fatal(err)
	}
	_, exit := collect(t, r, 10*time.Second)
	if exit.Code != 3 || len(exit.Stderr) > stderrTail || !strings.HasSuffix(exit.Stderr, "LAST LINE\n") {
		t.Errorf("exit code %d, stderr %d bytes, tail %q", exit.Code, len(exit.Stderr), exit.Stderr[max(0, len(exit.Stderr)-20):])
	}
}

// TestClaudeCodeEndlessLineStopsTheRun: a harness that prints one line with
// no end (here NUL bytes forever) has its run stopped once the line passes
// maxLine, with an Exit.Err that says why, the events before it delivered,
// and the heap in use bounded by maxLine rather than by what it printed.
// Not parallel: HeapInuse is process-wide.
func TestClaudeCodeEndlessLineStopsTheRun(t *testing.T) {
	c := &ClaudeCode{Bin: fakeClaude(t, "echo '"+initLine+"'\nexec cat /dev/zero"), Environ: []string{"PATH=" + os.Getenv("PATH")}, StopGrace: time.Second}
	spec := testSpec(t, "job-endless-line")
	hw := heapwatch.Start(4*maxLine, nil)
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	timeout := time.After(20 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-r.Events():
			if ok {
				evs = append(evs, ev)
			}
			open = ok
		case <-timeout:
			r.Stop()
			t.Fatalf("run did not end within 20 s (events so far: %d)", len(evs))
		}
	}
	exit := r.Wait()
	base, peak := hw.Stop()
	t.Logf("heap in use %d KiB before, peak %d KiB", base>>10, peak>>10)
	if len(evs) != 1 || evs[0].Kind != KindInit {
		t.Errorf("events %+v, want the init line's", evs)
	}
	if !errors.Is(exit.Err, errLineTooLong) || !strings.Contains(exit.Err.Error(), "longer than 8 MiB") || !exit.Stopped {
		t.Errorf("exit = %+v, want Stopped with the over-long line's error", exit)
	}
	// The line up to maxLine, its copies while it grows and what the
	// collector has not taken yet: a few times maxLine, however long the line.
	if bound := uint64(4 * maxLine); peak > base+bound {
		t.Errorf("heap in use grew from %d KiB to %d KiB, more than %d KiB", base>>10, peak>>10, bound>>10)
	}
	assertTreeGone(t, spec.JobID)
}

func TestEnvIsAllowListed(t *testing.T) {
	c := &ClaudeCode{Environ: []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "HOME=/root",
		"DEEPSEEK_API_KEY=sk-test-double-key-of-daemon", "MCP_PATH_SECRET=test-secret-0123456789abcdef",
		"BRIDGE_TUNNEL_TOKEN=test-tunnel-token", "BRIDGE_STATE_DIR=/state", "AWS_SECRET_ACCESS_KEY=x",
		"ANTHROPIC_API_KEY=x", "SSH_AUTH_SOCK=/tmp/agent",
	}}
	spec := Spec{JobID: "j1", ConfigDir: "/state/harness/j1", BaseURL: "http://127.0.0.1:1/anthropic", Token: "per-job-token", Model: "deepseek-flash"}
	env := map[string]string{}
	for _, kv := range c.Env(spec) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("duplicate %s", k)
		}
		env[k] = v
	}
	want := map[string]string{
		"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
		"HOME": "/state/harness/j1/home", "CLAUDE_CONFIG_DIR": "/state/harness/j1", "BRIDGE_JOB_ID": "j1",
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:1/anthropic", "ANTHROPIC_AUTH_TOKEN": "per-job-token",
		"ANTHROPIC_MODEL": "deepseek-flash", "ANTHROPIC_SMALL_FAST_MODEL": "deepseek-flash",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"DEEPSEEK_API_KEY", "MCP_PATH_SECRET", "BRIDGE_TUNNEL_TOKEN", "BRIDGE_STATE_DIR", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "SSH_AUTH_SOCK"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s leaked into the harness env", k)
		}
	}
	for k, v := range env {
		if strings.Contains(v, "test-secret-0123456789abcdef") || strings.Contains(v, "key-of-daemon") {
			t.Errorf("%s carries a daemon secret", k)
		}
	}
}

// TestEnvPathIsAbsolute: an empty or relative PATH entry would look commands
// up in the workspace, where the job writes; they are dropped.
func TestEnvPathIsAbsolute(t *testing.T) {
	spec := Spec{JobID: "j1", ConfigDir: "/state/harness/j1", BaseURL: "http://127.0.0.1:1", Token: "per-job-token", Model: "deepseek-flash"}
	for _, tc := range []struct{ daemon, want string }{
		{"/usr/local/bin:/usr/bin", "/usr/local/bin:/usr/bin"},
		{".:/usr/bin::bin:/opt/x/bin:", "/usr/bin:/opt/x/bin"},
		{"::.", "/usr/local/bin:/usr/bin:/bin"},
		{"", "/usr/local/bin:/usr/bin:/bin"},
	} {
		environ := []string{"LANG=C"}
		if tc.daemon != "" {
			environ = append(environ, "PATH="+tc.daemon)
		}
		var paths []string
		for _, kv := range (&ClaudeCode{Environ: environ}).Env(spec) {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				paths = append(paths, v)
			}
		}
		if len(paths) != 1 || paths[0] != tc.want {
			t.Errorf("daemon PATH %q: harness PATH %q, want [%q]", tc.daemon, paths, tc.want)
		}
	}
}

// Behind the model proxy only the proxy retries: the harness gets
// CLAUDE_CODE_MAX_RETRIES=0, and only then.
func TestEnvNoRetries(t *testing.T) {
	spec := Spec{JobID: "j1", ConfigDir: "/state/harness/j1", BaseURL: "http://127.0.0.1:1", Token: "per-job-token", Model: "deepseek-flash"}
	for _, tc := range []struct {
		noRetries bool
		want      []string
	}{
		{false, nil},
		{true, []string{"CLAUDE_CODE_MAX_RETRIES=0"}},
	} {
		c := &ClaudeCode{Environ: []string{"PATH=/usr/bin", "CLAUDE_CODE_MAX_RETRIES=7"}, NoRetries: tc.noRetries}
		var got []string
		for _, kv := range c.Env(spec) {
			if strings.HasPrefix(kv, "CLAUDE_CODE_MAX_RETRIES=") {
				got = append(got, kv)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("NoRetries %v: %v, want %v", tc.noRetries, got, tc.want)
		}
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude-pinned")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExe := filepath.Join(dir, "plain")
	os.WriteFile(notExe, []byte("x"), 0o644)
	onPath := func(string) (string, error) { return "/usr/bin/claude", nil }
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	tests := []struct {
		name       string
		configured string
		pinned     []string
		look       func(string) (string, error)
		want       string
		wantErr    bool
	}{
		{"configured wins", exe, nil, onPath, exe, false},
		{"configured but missing is an error, no fallback", filepath.Join(dir, "nope"), []string{exe}, onPath, "", true},
		{"configured not executable", notExe, nil, onPath, "", true},
		{"pinned before PATH", "", []string{filepath.Join(dir, "missing"), exe}, onPath, exe, false},
		{"PATH last", "", []string{filepath.Join(dir, "missing")}, onPath, "/usr/bin/claude", false},
		{"nothing", "", nil, noPath, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(tt.configured, tt.pinned, tt.look)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Locate = %q, %v", got, err)
			}
			if err != nil && (!errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "BRIDGE_CLAUDE_BIN")) {
				t.Errorf("error %q does not say how to fix it", err)
			}
		})
	}
}

func TestStartWithoutBinaryIsClearError(t *testing.T) {
	_, err := (&ClaudeCode{}).Start(t.Context(), testSpec(t, "x"))
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "scripts/install.sh") {
		t.Fatalf("err = %v", err)
	}
}

func TestClaudeCodeKillsProcessesThatLeftTheGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	// setsid puts the sleeper in its own session and group: only the marker
	// finds it. The harness ends only once the sleeper has left the group (the
	// ready file is made after setsid), so the group's kill cannot take it.
	ready := filepath.Join(t.TempDir(), "ready")
	body := "setsid sh -c 'touch \"$0\"; exec sleep 300' '" + ready + "' </dev/null >/dev/null 2>&1 &\n" +
		"while [ ! -e '" + ready + "' ]; do :; done\necho '" + initLine + "'\necho '" + resultLine + "'\nexit 0"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-setsid")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, r, 10*time.Second)
	assertTreeGone(t, spec.JobID)
}

func TestClaudeCodeLingeringAfterResultIsEnded(t *testing.T) {
	// A harness that ignores the closed stdin is ended after the result grace;
	// the run is not reported as stopped, so its result still counts.
	body := "trap '' TERM\necho '" + initLine + "'\necho '" + resultLine + "'\nwhile :; do sleep 1; done"
	c := &ClaudeCode{Bin: fakeClaude(t, body), Environ: []string{"PATH=" + os.Getenv("PATH")}, ResultGrace: 200 * time.Millisecond, StopGrace: 200 * time.Millisecond}
	spec := testSpec(t, "job-linger")
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 10*time.Second)
	if len(evs) != 2 || evs[1].Kind != KindResult || exit.Stopped || exit.Signal == "" {
		t.Fatalf("events %d, exit %+v", len(evs), exit)
	}
	assertTreeGone(t, spec.JobID)
}

package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/modelproxy"
)

// Without a key there is no model proxy, and every job is refused at start
// with the reason — no job record, no harness, no key handed out.
func TestAgentJobsWithoutKeyAreRefused(t *testing.T) {
	cfg := configtest.New(t, map[string]string{"DEEPSEEK_API_KEY": ""})
	var logBuf bytes.Buffer
	log := zerolog.New(&logBuf)
	a, err := newAgentJobs(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	reg, mp, info := a.reg, a.proxy, a.info
	t.Cleanup(func() { reg.Close(t.Context()) })
	if mp != nil || info.Available || info.ModelProxy != "" || !strings.Contains(info.Error, "DEEPSEEK_API_KEY") {
		t.Errorf("proxy %v, info %+v", mp, info)
	}
	if !strings.Contains(logBuf.String(), "agent jobs cannot run: DEEPSEEK_API_KEY is not set") {
		t.Errorf("log: %s", logBuf.String())
	}
	_, err = reg.Start(t.Context(), jobs.StartRequest{Task: "x", Workspace: filepath.Dir(cfg.StateDir)})
	if !errors.Is(err, errNoKeyForJobs) || !strings.Contains(err.Error(), "set it and restart") {
		t.Errorf("Start = %v", err)
	}
	if n := len(reg.List()); n != 0 {
		t.Errorf("%d jobs recorded", n)
	}
	if _, _, err := (refusingGateway{errNoKeyForJobs}).Open("j"); !errors.Is(err, errNoKeyForJobs) {
		t.Errorf("refusingGateway.Open = %v", err)
	}
}

// With a key the proxy listens on its own loopback port (named in the
// harness info), hands out per-job tokens that reach the upstream with the
// real key, and the job's usage comes back through the gateway adapter.
func TestAgentJobsBehindModelProxy(t *testing.T) {
	const key = "sk-test-double-key-0123456789"
	d := deepseektest.New(deepseektest.WithKey(key))
	t.Cleanup(d.Close)
	u := deepseektest.Usage{InputTokens: 1200, CacheHitTokens: 800, OutputTokens: 55}
	d.ScriptAnthropic(deepseektest.Text("hi").WithUsage(u))
	cfg := configtest.New(t, map[string]string{"DEEPSEEK_API_KEY": key, "DEEPSEEK_BASE_URL": d.URL()})
	a, err := newAgentJobs(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	reg, mp, info := a.reg, a.proxy, a.info
	defer stopModelProxy(context.Background(), mp, zerolog.Nop())
	defer reg.Close(t.Context())
	host, _, err := net.SplitHostPort(info.ModelProxy)
	if err != nil || !net.ParseIP(host).IsLoopback() || mp.URL() != "http://"+info.ModelProxy {
		t.Fatalf("model_proxy %q (url %q): %v", info.ModelProxy, mp.URL(), err)
	}

	gw := proxyGateway{mp}
	base, token, err := gw.Open("job-1")
	if err != nil || base != mp.URL() || token == "" || strings.Contains(token, key) {
		t.Fatalf("Open = %q %q %v", base, token, err)
	}
	body := `{"model":"deepseek-v4-flash","max_tokens":10,"tools":[{"name":"t"}],"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), key) {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if reqs := d.AnthropicRequests(); len(reqs) != 1 || reqs[0].Header.Get("X-Api-Key") != key {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	// A stopped job's token dies at Revoke, before Close; its usage stays.
	gw.Revoke("job-1")
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after Revoke: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	got, err := gw.Close("job-1")
	want := jobs.Usage{InputTokens: u.InputTokens - u.CacheHitTokens, CacheReadTokens: u.CacheHitTokens, OutputTokens: u.OutputTokens}
	if err != nil || got.Usage != want || got.CostUSD <= 0 {
		t.Errorf("Close = %+v %v, want %+v", got, err, want)
	}
	if _, err := gw.Close("job-1"); !errors.Is(err, modelproxy.ErrUnknownJob) {
		t.Errorf("second Close = %v", err)
	}
	stopModelProxy(context.Background(), mp, zerolog.Nop()) // waits for the handler, which writes the ledger
	// The daily ledger is where docs/STATE.md says.
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "spend-"+time.Now().UTC().Format(time.DateOnly)+".json")); err != nil {
		t.Errorf("daily spend file: %v", err)
	}
	if _, _, err := gw.Open("job-2"); !errors.Is(err, modelproxy.ErrNotListening) {
		t.Errorf("Open after stop = %v", err)
	}
}

func TestJobsUsageKeepsFieldMeanings(t *testing.T) {
	got := jobsUsage(modelproxy.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, ThinkingTokens: 4, CostUSD: 5, Requests: 6, Retries: 7})
	if want := (jobs.Metered{Usage: jobs.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, ThinkingTokens: 4}, CostUSD: 5}); got != want {
		t.Errorf("jobsUsage = %+v, want %+v", got, want)
	}
}

// The daemon's PATH entries that a job could write — in an allowed root (the
// owner's virtualenv), the state dir, /tmp, the job's workspace, relative —
// are logged once at start with the reason and never reach the harness;
// /usr/bin does.
func TestHarnessPathLeavesOutWhatJobsWrite(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	ws := filepath.Join(root, "ws")
	for _, d := range []string{filepath.Join(root, ".venv", "bin"), filepath.Join(ws, "bin"), state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	venv, stateBin := filepath.Join(root, ".venv", "bin"), filepath.Join(state, "bin")
	t.Setenv("PATH", strings.Join([]string{venv, "/tmp/x", stateBin, "bin", "/usr/bin", "/bin"}, ":"))
	cfg := configtest.New(t, map[string]string{"DEEPSEEK_API_KEY": "", "DEEPSEEK_ALLOWED_ROOTS": root, "BRIDGE_STATE_DIR": state})

	var logBuf bytes.Buffer
	a, err := newAgentJobs(cfg, zerolog.New(&logBuf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.reg.Close(t.Context()) })
	logs := logBuf.String()
	for _, want := range []string{
		"PATH entry " + venv + " is left out of the harness's PATH: inside allowed root " + root + ": a job could write a program there that the harness or its sandbox would run",
		"PATH entry /tmp/x is left out of the harness's PATH: inside the temp dir /tmp: a job could write",
		"PATH entry " + stateBin + " is left out of the harness's PATH: inside the state dir " + state + ": a job could write",
		`PATH entry \"bin\" is left out of the harness's PATH: it is not absolute`,
	} {
		if n := strings.Count(logs, want); n != 1 {
			t.Errorf("log has %q %d times, want once:\n%s", want, n, logs)
		}
	}
	if !strings.Contains(logs, `"level":"warn"`) || strings.Contains(logs, "PATH entry /usr/bin") {
		t.Errorf("log:\n%s", logs)
	}
	if a.path != os.Getenv("PATH") {
		t.Errorf("daemon.json path %q, want the daemon's PATH", a.path)
	}

	spec := harness.Spec{JobID: "j1", Workspace: ws, ConfigDir: filepath.Join(state, "harness", "j1")}
	t.Setenv("PATH", strings.Join([]string{venv, "/tmp/x", stateBin, filepath.Join(ws, "bin"), "bin", "/usr/bin"}, ":"))
	var paths []string
	for _, kv := range claudeCode("", nil, untrustedDirs(cfg)).Env(spec) {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			paths = append(paths, v)
		}
	}
	if len(paths) != 1 || paths[0] != "/usr/bin" {
		t.Errorf("harness PATH %q, want [/usr/bin]", paths)
	}
}

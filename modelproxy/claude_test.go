//go:build unix

package modelproxy

import (
	"bytes"
	"context"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"io/fs"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// claudeBin is the pinned Claude Code (skipped under -short).
func claudeBin(t *testing.T) string { t.Helper(); return testenv.ClaudeBin(t) }

// runClaude runs the real harness against the proxy with a job token, the way
// the registry will (env only; no key anywhere), in a fresh workspace.
func runClaude(t *testing.T, bin, baseURL, token, prompt string) (stdout string, configDir string) {
	t.Helper()
	work, configDir := t.TempDir(), t.TempDir()
	home := filepath.Join(configDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--max-turns", "4", "--allowedTools", "Bash")
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CLAUDE_CONFIG_DIR=" + configDir,
		"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_AUTH_TOKEN=" + token,
		"ANTHROPIC_MODEL=" + testModel, "ANTHROPIC_SMALL_FAST_MODEL=" + testModel,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_MAX_RETRIES=0", // the proxy retries; the harness must not retry again
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	// Its own process group, killed whole on timeout and at cleanup: nothing
	// Claude Code started (a Bash command, a node child) outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatalf("start claude: %v", err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	t.Logf("claude exited: %v", err)
	return out.String(), configDir
}

// TestClaudeCodeThroughProxy drives the real Claude Code through the proxy
// and the double: the Bash tool prints the environment; it holds the job
// token, never the key; usage equals what the double sent; the token dies
// with Close.
func TestClaudeCodeThroughProxy(t *testing.T) {
	bin := claudeBin(t)
	const realKey = "sk-test-double-key-0123456789abcdef"
	sideUsage := deepseektest.Usage{InputTokens: 300, CacheHitTokens: 100, OutputTokens: 7}
	d := deepseektest.New(deepseektest.WithKey(realKey),
		deepseektest.WithSideTurn(deepseektest.Text("side").WithUsage(sideUsage)))
	t.Cleanup(d.Close)
	scripted := []deepseektest.Usage{
		{InputTokens: 21_000, CacheHitTokens: 15_000, OutputTokens: 120},
		{InputTokens: 22_000, CacheHitTokens: 20_000, OutputTokens: 40},
	}
	d.ScriptAnthropic(
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]string{"command": "env", "description": "print the environment"})).WithUsage(scripted[0]),
		deepseektest.Func(func(r deepseektest.Request) deepseektest.Turn {
			return deepseektest.Text("env printed").WithUsage(scripted[1])
		}),
	)
	p, err := New(Options{Upstream: d.URL() + "/anthropic", APIKey: realKey, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	base, token, err := p.Open("job-cc")
	if err != nil {
		t.Fatal(err)
	}

	out, configDir := runClaude(t, bin, base, token, "print your environment with Bash")
	if !strings.Contains(out, `"type":"result"`) || !strings.Contains(out, "env printed") {
		t.Fatalf("no successful result from Claude Code:\n%s", tail(out, 4000))
	}

	results := d.LastToolResultTexts(deepseektest.SideAnthropic)
	env := strings.Join(results, "\n")
	if !strings.Contains(env, "ANTHROPIC_AUTH_TOKEN="+token) {
		t.Fatalf("the Bash tool did not print the job token; tool results:\n%s", tail(env, 2000))
	}
	if strings.Contains(env, realKey) || strings.Contains(out, realKey) {
		t.Fatal("the real key reached the harness")
	}
	filepath.WalkDir(configDir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, rerr := os.ReadFile(path); rerr == nil && bytes.Contains(b, []byte(realKey)) {
				t.Errorf("the real key is in the harness's config dir: %s", path)
			}
		}
		return nil
	})

	// Usage equals the sum of the usage blocks the double sent.
	var want Usage
	var messages int64
	for _, r := range d.AnthropicRequests() {
		if r.Path != "/anthropic/v1/messages" {
			continue
		}
		messages++
		if r.Header.Get("Authorization") != "Bearer "+realKey {
			t.Errorf("double got %q", r.Header.Get("Authorization"))
		}
		u := sideUsage
		if r.Scripted {
			u, scripted = scripted[0], scripted[1:]
		} else if !r.SideRequest {
			t.Fatalf("an unexpected default answer: %s", r.Body)
		}
		want.InputTokens += u.InputTokens - u.CacheHitTokens
		want.CacheReadTokens += u.CacheHitTokens
		want.OutputTokens += u.OutputTokens
	}
	if len(scripted) != 0 {
		t.Fatalf("%d scripted turns left", len(scripted))
	}
	want.CostUSD = deepseek.PriceFor(testModel).Cost(want.CacheReadTokens, want.InputTokens, want.OutputTokens)
	got, err := p.Close("job-cc")
	if err != nil {
		t.Fatal(err)
	}
	gotTokens := got
	gotTokens.Requests, gotTokens.Retries = 0, 0
	gotTokens.CostUSD, want.CostUSD = 0, 0 // compared below: a sum of per-answer costs rounds differently
	if gotTokens != want || math.Abs(got.CostUSD-deepseek.PriceFor(testModel).Cost(want.CacheReadTokens, want.InputTokens, want.OutputTokens)) > 1e-12 {
		t.Fatalf("usage %+v, want the double's sum %+v", got, want)
	}
	t.Logf("Claude Code made %d model calls through the proxy (%d requests incl. count_tokens); usage %+v", messages, got.Requests, got)

	// After the job, its token is refused.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages", strings.NewReader(msgBody))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token after Close: %d", resp.StatusCode)
	}
}

// TestClaudeCodeBudgetExceeded: a job over its ceiling gets the budget
// message as Claude Code's result, after one refused request, and the
// registry is told once.
func TestClaudeCodeBudgetExceeded(t *testing.T) {
	bin := claudeBin(t)
	d := deepseektest.New(deepseektest.WithSideTurn(deepseektest.Text("side").WithUsage(deepseektest.Usage{InputTokens: 10, OutputTokens: 1})))
	t.Cleanup(d.Close)
	d.ScriptAnthropic(
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]string{"command": "echo partial-work > out.txt", "description": "write"})).
			WithUsage(deepseektest.Usage{InputTokens: 3_000_000, OutputTokens: 1_000}),
		deepseektest.Text("never reached"),
	)
	f := newFaults()
	p, err := New(Options{Upstream: d.URL() + "/anthropic", APIKey: d.Key(), Model: testModel, JobMaxCostUSD: 0.10, OnJobFault: f.record})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Listen(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	base, token, _ := p.Open("job-budget")
	out, _ := runClaude(t, bin, base, token, "write the partial work")
	if !strings.Contains(out, "budget exceeded: this job spent $0.42 of its $0.10 limit (BRIDGE_JOB_MAX_COST_USD)") {
		t.Fatalf("Claude Code's output lacks the budget message:\n%s", tail(out, 4000))
	}
	select {
	case got := <-f.ch:
		if !strings.HasPrefix(got, "job-budget: budget exceeded") {
			t.Fatalf("fault %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnJobFault was not called")
	}
	if _, pending := d.Pending(); pending != 1 {
		t.Fatalf("%d scripted turns left, want 1 (the refused call never reached the double)", pending)
	}
}

// TestClaudeCodeEndlessAnswer: an upstream whose answer never ends, streamed
// or not, is cut off at the output cap of Claude Code's max_tokens, and the
// job's result says why. Measured with 2.1.328: the streamed answer's error
// event fails the request ("failed with: other"), Claude Code retries it
// once without streaming, and that 502 is its result, message and all.
func TestClaudeCodeEndlessAnswer(t *testing.T) {
	bin := claudeBin(t)
	piece := strings.Repeat("x", 1000)
	sse := endlessAnthropic("text/event-stream",
		"event: message_start\ndata: "+mustJSON(turnEvents(usageBlock{Input: 100, Output: 1}, 0, "")[0].data)+"\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""+piece+"\"}}\n\n")
	whole := endlessAnthropic("application/json", `{"type":"message","content":[{"type":"text","text":"`, piece)
	up := newUpstream(t)
	up.fallback = func(w http.ResponseWriter, r *http.Request) {
		reqs := up.requests()
		if bytes.Contains(reqs[len(reqs)-1].Body, []byte(`"stream":true`)) {
			sse(w, r)
		} else {
			whole(w, r)
		}
	}
	p := startProxy(t, up, Options{})
	out, _ := runClaude(t, bin, p.URL(), open(t, p, "job-endless"), "say hi")
	if want := `"result":"API Error: 502 the upstream sent more than the output cap allows: the answer passed ` +
		strconv.FormatInt(responseCap(32000), 10) + ` bytes, more than max_tokens=32000 can produce`; !strings.Contains(out, want) {
		t.Fatalf("Claude Code's result lacks %q:\n%s", want, tail(out, 4000))
	}
	if got := len(up.requests()); got != 2 {
		t.Errorf("%d upstream requests, want 2 (streamed, then Claude Code's one retry without streaming)", got)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

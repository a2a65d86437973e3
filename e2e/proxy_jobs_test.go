package e2e

// End-to-end tests of the per-job model proxy (issue 7): a real `bridge
// serve`, the real Claude Code, the DeepSeek double behind the proxy, and the
// official Go SDK client. The job never holds the DeepSeek key; its usage and
// cost are the proxy's count; ceilings and upstream faults end it cleanly.

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// unattended runs the scripted Bash commands without asking a human: these
// tests are about the model proxy, not the approval rules (the OS sandbox
// stays on, so the environment checks see what a sandboxed command sees).
var unattended = map[string]string{"BRIDGE_CC_APPROVAL": "off"}

// envValue is the value of name in a KEY=VALUE list ("" when absent).
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// A job's Bash command prints its environment: it shows a per-job token and
// the proxy's address, never the key. While the job runs, no process of its
// tree holds the key in its environment or argv, nor does any file of its
// config dir; the token works. Once the job is done the token is refused, and
// no file of the state dir — snapshot, trace, log, harness dir, daily spend —
// holds the key. Upstream, every call carried the key and never the token.
func TestProxyJobSeesTokenNotKey(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, mergeEnv(unattended, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "1000"}))
	key := a.d.Key()
	proxyURL := "http://" + modelProxyAddr(t, a.bridgeProc)
	ws := a.workspace(t, nil)
	printed := make(chan string, 1)
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "env", "description": "print the environment"})),
		dt.Func(func(r dt.Request) dt.Turn {
			printed <- strings.Join(r.ToolResultTexts(), "\n")
			return dt.ToolCalls(dt.Call("Bash", map[string]any{
				"command": "timeout 60 sh -c 'until [ -e release ]; do sleep 0.1; done'", "description": "wait for the test",
			}))
		}),
		dt.Text("I printed the environment."),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Print your environment.", "workspace": ws}, nil)
	if c.IsError || c.P.JobID == "" {
		t.Fatalf("start: %s", c.Text)
	}
	id := c.P.JobID
	waitJobCommand(t, id, "timeout", jobLimit)

	// While it runs: the environment (/proc/PID/environ) and argv of every
	// process of the tree, and the job's config dir. The harness holds the
	// job's token and the proxy's URL; a command below it holds the same or,
	// when the OS sandbox unsets them, none.
	snap, err := jobs.Load(a.dir(), id)
	if err != nil || snap.HarnessPID == 0 {
		t.Fatalf("snapshot: pid %d, %v", snap.HarnessPID, err)
	}
	envs := jobEnvirons(t, id, key)
	harnessEnv, ok := envs[snap.HarnessPID]
	if !ok || len(envs) < 2 {
		t.Fatalf("found %d processes of the job's tree, harness (pid %d) among them: %v", len(envs), snap.HarnessPID, ok)
	}
	token := envValue(harnessEnv, "ANTHROPIC_AUTH_TOKEN")
	if !strings.HasPrefix(token, "bridge-job-") || len(token) < len("bridge-job-")+22 { // ≥ 128 bits of base64
		t.Fatalf("the harness's ANTHROPIC_AUTH_TOKEN = %q, want a per-job token", token)
	}
	if got := envValue(harnessEnv, "CLAUDE_CODE_MAX_RETRIES"); got != "0" {
		t.Errorf("the harness's CLAUDE_CODE_MAX_RETRIES = %q, want 0 (only the proxy retries)", got)
	}
	for pid, env := range envs {
		if tok := envValue(env, "ANTHROPIC_AUTH_TOKEN"); tok != token && (pid == snap.HarnessPID || tok != "") {
			t.Errorf("pid %d: ANTHROPIC_AUTH_TOKEN = %q, want the job's token", pid, tok)
		}
		if got := envValue(env, "ANTHROPIC_BASE_URL"); got != proxyURL && (pid == snap.HarnessPID || got != "") {
			t.Errorf("pid %d: ANTHROPIC_BASE_URL = %q, want the proxy %s", pid, got, proxyURL)
		}
	}
	if n := assertKeyNotUnder(t, a.dir().HarnessDir(id), key); n == 0 {
		t.Errorf("the job's config dir %s holds no file; nothing was searched", a.dir().HarnessDir(id))
	}
	select {
	case out := <-printed:
		// The command sees the job's token (or none at all, when the OS
		// sandbox unsets it for commands) — never anything else.
		printedEnv := strings.Split(out, "\n")
		if envValue(printedEnv, "PATH") == "" {
			t.Errorf("the tool result is not the output of env:\n%s", out)
		}
		switch tok := envValue(printedEnv, "ANTHROPIC_AUTH_TOKEN"); tok {
		case token:
		case "":
			t.Log("the command's environment has no ANTHROPIC_AUTH_TOKEN (the sandbox unset it)")
		default:
			t.Errorf("the printed environment shows ANTHROPIC_AUTH_TOKEN=%q, want the job token %q", tok, token)
		}
		if got := envValue(printedEnv, "ANTHROPIC_BASE_URL"); got != "" && got != proxyURL {
			t.Errorf("the printed environment points at %q, not the proxy", got)
		}
		if strings.Contains(out, key) {
			t.Errorf("the printed environment holds the real key")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the model never saw the output of env")
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	if r := rawDo(t, http.MethodPost, proxyURL+"/v1/messages/count_tokens", messagesBody, bearer); r.status != http.StatusOK {
		t.Errorf("count_tokens with the live token: %d %s", r.status, r.body)
	}

	if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c = waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" || !hexNonce.MatchString(c.P.Nonce) {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	// The token died with the job.
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		r := rawDo(t, http.MethodPost, proxyURL+path, messagesBody, bearer)
		if typ, msg := anthropicError(t, r.body); r.status != http.StatusUnauthorized || typ != "authentication_error" || !strings.Contains(msg, "revoked") {
			t.Errorf("%s with the finished job's token: %d %s", path, r.status, r.body)
		}
	}
	assertJobTreeGone(t, id)
	if n := assertKeyNotUnder(t, a.StateDir(), key); n < 3 {
		t.Errorf("searched only %d files of the state dir", n)
	}
	assertNotInFiles(t, a.LogFiles(), token) // the daemon logs job ids, never tokens
	reqs := a.d.AnthropicRequests()
	if len(reqs) != 4 { // three turns and the count_tokens
		t.Errorf("the double saw %d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("X-Api-Key") != key || r.Header.Get("Authorization") != "Bearer "+key {
			t.Errorf("upstream request %d lacks the real key", i)
		}
		for name, vs := range r.Header {
			if slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, token) }) {
				t.Errorf("upstream request %d carries the job token in %s", i, name)
			}
		}
	}
}

// The proxy refuses a request without a token, with a wrong one, and with the
// real key offered as a token (401, Anthropic's error shape). It is not
// reachable through the public port — under /mcp/<secret> or anywhere else —
// and, bound to loopback, not from another address of this machine.
func TestProxyRefusesStrangersAndIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	addr := modelProxyAddr(t, a.bridgeProc)
	proxyURL := "http://" + addr
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"no token", nil, "missing job token"},
		{"wrong bearer", map[string]string{"Authorization": "Bearer bridge-job-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, "invalid, expired or revoked"},
		{"wrong x-api-key", map[string]string{"X-Api-Key": "sk-test-not-a-token"}, "invalid, expired or revoked"},
		{"the real key", map[string]string{"X-Api-Key": a.d.Key(), "Authorization": "Bearer " + a.d.Key()}, "invalid, expired or revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
				r := rawDo(t, http.MethodPost, proxyURL+path, messagesBody, tc.hdr)
				typ, msg := anthropicError(t, r.body)
				if r.status != http.StatusUnauthorized || typ != "authentication_error" || !strings.Contains(msg, tc.want) {
					t.Errorf("%s: %d %s", path, r.status, r.body)
				}
			}
		})
	}
	t.Run("not on the public port", func(t *testing.T) {
		key := map[string]string{"X-Api-Key": a.d.Key()}
		for _, path := range []string{
			"/mcp/" + a.Secret() + "/v1/messages", "/mcp/" + a.Secret() + "/anthropic/v1/messages",
			"/v1/messages", "/v1/messages/count_tokens", "/anthropic/v1/messages",
		} {
			if r := rawDo(t, http.MethodPost, a.BaseURL()+path, messagesBody, key); r.status != http.StatusNotFound {
				t.Errorf("public port %s: %d %s", redact(a.BaseURL()+path), r.status, r.body)
			}
		}
	})
	t.Run("not from another address", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(addr)
		other := nonLoopbackIP(t)
		if other == nil {
			t.Skip("this machine has no non-loopback address to try")
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(other.String(), port), 2*time.Second)
		if err == nil {
			conn.Close()
			t.Errorf("the model proxy port %s answers on %s", port, other)
		}
	})
	if n := len(a.d.AnthropicRequests()); n != 0 {
		t.Errorf("refused requests reached the upstream %d times", n)
	}
}

// nonLoopbackIP is an address of this machine that is not loopback, or nil.
func nonLoopbackIP(t testing.TB) net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP
		}
	}
	return nil
}

// Per-job usage and cost in structuredContent are the sum of the usage blocks
// the double sent, priced at DeepSeek's rates; `bridgectl jobs ID --json`
// shows the same, and the day's spend file counts them too.
func TestProxyUsageAndCost(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, unattended)
	ws := a.workspace(t, nil)
	usages := []dt.Usage{
		{InputTokens: 21_000, CacheHitTokens: 15_000, OutputTokens: 120},
		{InputTokens: 23_500, CacheHitTokens: 20_800, OutputTokens: 95},
		{InputTokens: 24_100, CacheHitTokens: 23_300, OutputTokens: 40},
	}
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo one", "description": "one"})).WithUsage(usages[0]),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo two", "description": "two"})).WithUsage(usages[1]),
		dt.Text("Both commands ran.").WithUsage(usages[2]),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Run echo one and echo two.", "workspace": ws}, nil)
	if c.P.Status != "done" {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	if reqs := a.d.AnthropicRequests(); len(reqs) != 3 || len(a.d.ScriptedAnthropicRequests()) != 3 {
		t.Fatalf("the double answered %d requests (%d scripted), want exactly the 3 scripted turns", len(reqs), len(a.d.ScriptedAnthropicRequests()))
	}
	want := wantUsage(usages...)
	wantCost := deepseek.PriceFor("deepseek-flash").Cost(want.CacheReadTokens, want.InputTokens, want.OutputTokens)
	if c.P.Usage != want || math.Abs(c.P.CostUSD-wantCost) > 1e-12 {
		t.Errorf("structuredContent usage %+v cost %v, want %+v %v", c.P.Usage, c.P.CostUSD, want, wantCost)
	}

	emptyEnv := filepath.Join(t.TempDir(), "empty.env") // a named .env must exist; this one sets nothing
	if err := os.WriteFile(emptyEnv, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), binary(t, "bridgectl"), "jobs", c.P.JobID, "--json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "BRIDGE_STATE_DIR=" + a.StateDir(),
		"BRIDGE_ENV_FILE=" + emptyEnv}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridgectl jobs --json: %v\n%s", err, out)
	}
	var snap jobs.Snapshot
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatalf("bridgectl jobs --json: %v\n%s", err, out)
	}
	if snap.ID != c.P.JobID || snap.Usage != want || math.Abs(snap.CostUSD-wantCost) > 1e-12 {
		t.Errorf("bridgectl shows usage %+v cost %v, want %+v %v", snap.Usage, snap.CostUSD, want, wantCost)
	}

	var day struct {
		Usage struct {
			InputTokens     int64   `json:"input_tokens"`
			OutputTokens    int64   `json:"output_tokens"`
			CacheReadTokens int64   `json:"cache_read_tokens"`
			CostUSD         float64 `json:"cost_usd"`
			Requests        int64   `json:"requests"`
		} `json:"usage"`
	}
	spend := a.dir().SpendFile(time.Now().UTC().Format(time.DateOnly))
	if raw, err := os.ReadFile(spend); err != nil || json.Unmarshal(raw, &day) != nil {
		t.Fatalf("daily spend %s: %v %s", spend, err, raw)
	}
	if u := day.Usage; u.InputTokens != want.InputTokens || u.CacheReadTokens != want.CacheReadTokens ||
		u.OutputTokens != want.OutputTokens || u.Requests != 3 || math.Abs(u.CostUSD-wantCost) > 1e-12 {
		t.Errorf("daily spend %+v, want %+v $%v in 3 requests", u, want, wantCost)
	}
}

// A job that crosses BRIDGE_JOB_MAX_COST_USD ends as error, "budget
// exceeded", with its partial work and no nonce; the refused call never
// reaches DeepSeek.
func TestProxyBudgetExceeded(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_JOB_MAX_COST_USD": "0.01"})
	ws := a.workspace(t, nil)
	draft := filepath.Join(ws, "draft.txt")
	big := dt.Usage{InputTokens: 100_000, OutputTokens: 1_000} // $0.01428 at flash prices
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": draft, "content": "first half"})).WithUsage(big),
		dt.Text("UNREACHABLE: the budget should have stopped the job"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Write a long essay.", "workspace": ws}, nil)
	assertNotDone(t, c, jobs.StatusError)
	for _, want := range []string{"budget exceeded", "$0.01 limit", "BRIDGE_JOB_MAX_COST_USD"} {
		if !strings.Contains(c.P.Error, want) {
			t.Errorf("error lacks %q: %q", want, c.P.Error)
		}
	}
	if c.P.Partial.ToolCalls["Write"] != 1 || !slices.Contains(c.P.Partial.FilesTouched, draft) {
		t.Errorf("partial = %+v", c.P.Partial)
	}
	if b, err := os.ReadFile(draft); err != nil || string(b) != "first half" {
		t.Errorf("draft.txt = %q, %v", b, err)
	}
	if n := len(a.d.AnthropicRequests()); n != 1 {
		t.Errorf("the double saw %d requests; the one over budget must not reach it", n)
	}
	if want := wantUsage(big); c.P.Usage != want {
		t.Errorf("usage %+v, want %+v", c.P.Usage, want)
	}
	assertStopReason(t, c, jobs.StopBudgetCeiling, "BRIDGE_JOB_MAX_COST_USD")
	assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusError)
	assertJobTreeGone(t, c.P.JobID)
}

// Upstream faults are handled once, in the proxy: a 429 followed by success
// is invisible to the job (the harness itself never retries: a 429 reaching
// it would end the run), and a 402 ends the job with the balance message.
func TestProxyUpstreamFaults(t *testing.T) {
	t.Parallel()
	t.Run("429 then success", func(t *testing.T) {
		t.Parallel()
		a := startAgentBridge(t, false, nil)
		ws := a.workspace(t, nil)
		a.d.ScriptAnthropic(dt.RateLimited(1), dt.Text("Answered after the rate limit."))
		cs := goSDKClient(t, a.URL())
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Say something.", "workspace": ws}, nil)
		if c.IsError || c.P.Status != "done" || c.P.Result != "Answered after the rate limit." || !hexNonce.MatchString(c.P.Nonce) {
			t.Fatalf("status %s result %q: %s", c.P.Status, c.P.Result, c.Text)
		}
		reqs := a.d.AnthropicRequests()
		if len(reqs) != 2 || string(reqs[0].Body) != string(reqs[1].Body) {
			t.Fatalf("the double saw %d requests; want the same one twice", len(reqs))
		}
		if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
			t.Errorf("retried after %v, before Retry-After: 1", gap)
		}
		if !strings.Contains(string(a.LogBytes()), "upstream busy") {
			t.Errorf("the bridge log does not record the retry")
		}
	})
	t.Run("402 ends the job", func(t *testing.T) {
		t.Parallel()
		a := startAgentBridge(t, false, nil)
		ws := a.workspace(t, nil)
		a.d.ScriptAnthropic(dt.Error(http.StatusPaymentRequired), dt.Text("UNREACHABLE"))
		cs := goSDKClient(t, a.URL())
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Say something.", "workspace": ws}, nil)
		assertNotDone(t, c, jobs.StatusError)
		if !strings.Contains(c.P.Error, "insufficient balance") || !strings.Contains(c.P.Error, "top up") {
			t.Errorf("error = %q", c.P.Error)
		}
		if n := len(a.d.AnthropicRequests()); n != 1 {
			t.Errorf("the double saw %d requests; a 402 is not retried", n)
		}
		assertStopReason(t, c, jobs.StopModelError, "top it up")
		if c.P.ModelError != jobs.ModelBalance {
			t.Errorf("model_error = %q, want %q", c.P.ModelError, jobs.ModelBalance)
		}
		assertJobTreeGone(t, c.P.JobID)
	})
	t.Run("503 past the retries is an overload", func(t *testing.T) {
		t.Parallel()
		a := startAgentBridge(t, false, nil)
		ws := a.workspace(t, nil)
		a.d.ScriptAnthropic(dt.Error(http.StatusServiceUnavailable), dt.Error(http.StatusServiceUnavailable),
			dt.Error(http.StatusServiceUnavailable), dt.Error(http.StatusServiceUnavailable), dt.Text("UNREACHABLE"))
		cs := goSDKClient(t, a.URL())
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Say something.", "workspace": ws}, nil)
		if !jobs.Status(c.P.Status).Final() {
			c = waitSettled(t, cs, c.P.JobID, jobLimit)
		}
		assertNotDone(t, c, jobs.StatusError)
		assertStopReason(t, c, jobs.StopModelError, "try again later")
		if c.P.ModelError != jobs.ModelOverload {
			t.Errorf("model_error = %q, want %q: %s", c.P.ModelError, jobs.ModelOverload, c.Text)
		}
	})
}

// Streaming passes through: the harness reports the first tool call of a
// turn while the double is still streaming the rest of that turn. The second
// call's arguments arrive in many slow chunks, so the double sends its last
// event at least tail after the first call's block has ended.
func TestProxyStreamsThrough(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, unattended)
	ws := a.workspace(t, nil)
	const chunkDelay = 100 * time.Millisecond
	first := dt.Call("Bash", map[string]any{"command": "echo first", "description": "first"})
	second := dt.Call("Bash", map[string]any{"command": "echo " + strings.Repeat("x", 480), "description": "second"})
	// After the first call's content_block_stop the double sends the second
	// call's start, its 16-byte argument chunks, its stop, message_delta and
	// message_stop, each chunkDelay after the previous one.
	tail := time.Duration(1+(len(second.Arguments)+15)/16+1+2) * chunkDelay
	a.d.ScriptAnthropic(
		dt.ToolCalls(first, second).WithChunkDelay(chunkDelay),
		dt.Text("Both ran."),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Run two echos.", "workspace": ws}, nil)
	if c.P.Status != "done" {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
	var uses []time.Time
	for _, e := range snap.Trace {
		if e.Kind == "tool_use" {
			uses = append(uses, e.Time)
		}
	}
	if len(uses) != 2 {
		t.Fatalf("trace has %d tool calls", len(uses))
	}
	// The harness parsed the first call at uses[0]; if the proxy buffered
	// the stream, both calls would arrive together after the double's last event.
	if gap := uses[1].Sub(uses[0]); gap < tail/2 {
		t.Errorf("the two calls of one streamed turn reached the bridge %v apart; with streaming passed through they are ≥ %v apart", gap, tail/2)
	}
	t.Logf("first call reported %v before the second (tail of the stream %v)", uses[1].Sub(uses[0]), tail)
}

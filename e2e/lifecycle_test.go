package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// TestServeRefusesBadSecret: without a usable MCP_PATH_SECRET `bridge serve`
// exits non-zero, says how to make one, never echoes the value, and never
// listens.
func TestServeRefusesBadSecret(t *testing.T) {
	t.Parallel()
	bin := binary(t, "bridge")
	cases := []struct{ name, secret string }{
		{"missing", ""},
		{"15 characters", "short-secret-15"},
		{"not one path segment", "has/a/slash-0123456789"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve")
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PORT=0", "BRIDGE_STATE_DIR=" + state}
			if c.secret != "" {
				cmd.Env = append(cmd.Env, "MCP_PATH_SECRET="+c.secret)
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("bridge serve kept running with a bad secret; output:\n%s", out.Bytes())
			}
			if err == nil || cmd.ProcessState.ExitCode() == 0 {
				t.Fatalf("bridge serve exited 0 with a bad secret; output:\n%s", out.Bytes())
			}
			text := out.String()
			if !strings.Contains(text, "MCP_PATH_SECRET") || !strings.Contains(text, "bridgectl secret") {
				t.Errorf("output does not say how to make a secret:\n%s", text)
			}
			if c.secret != "" && strings.Contains(text, c.secret) {
				t.Errorf("output echoes the secret:\n%s", text)
			}
			if _, err := os.Stat(filepath.Join(state, "daemon.json")); err == nil {
				t.Errorf("daemon.json written although the daemon refused to start")
			}
		})
	}
}

// TestNoAPIKey: the daemon starts and serves without DEEPSEEK_API_KEY, and
// deepseek_flash answers with an error result that says what to set, without
// calling upstream.
func TestNoAPIKey(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	b := startBridge(t, map[string]string{"DEEPSEEK_BASE_URL": d.URL()})
	cs := goSDKClient(t, b.URL())
	res, err := cs.CallTool(t.Context(), toolCall("deepseek_flash", map[string]any{"task": "anything"}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(textOf(res), "DEEPSEEK_API_KEY") {
		t.Errorf("IsError %v, text %q: want an error result naming DEEPSEEK_API_KEY", res.IsError, textOf(res))
	}
	if n := len(d.Requests()); n != 0 {
		t.Errorf("the double got %d requests without a key configured", n)
	}
}

// TestGracefulShutdown: SIGTERM while a deepseek_flash call is in flight lets
// the call finish with its answer, then the daemon exits 0 and removes daemon.json.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	b, o := flashAtSIGTERM(t, 1500*time.Millisecond, "answered during shutdown")
	if o.err != nil || o.res.IsError || !strings.Contains(textOf(o.res), "answered during shutdown") {
		t.Errorf("in-flight call: err %v, result %+v: want its answer", o.err, o.res)
	}
	if _, err := os.Stat(filepath.Join(b.StateDir(), "daemon.json")); err == nil {
		t.Errorf("daemon.json left behind after a clean stop")
	}
}

// sigtermOutcome is how a flash call in flight at SIGTERM ended, and when.
type sigtermOutcome struct {
	res     *mcp.CallToolResult
	err     error
	at      time.Time // its answer arrived
	stopped time.Time // SIGTERM was sent
}

// flashAtSIGTERM starts a bridge, makes a deepseek_flash call whose
// upstream answers text after delay, sends SIGTERM once the call has
// reached the double, checks the daemon exits 0, and returns how the call
// ended.
func flashAtSIGTERM(t *testing.T, delay time.Duration, text string) (*bridgeProc, sigtermOutcome) {
	t.Helper()
	d := startDouble(t)
	b := startBridge(t, doubleEnv(d))
	cs := goSDKClient(t, b.URL())
	arrived := make(chan struct{})
	d.Script(deepseektest.Func(func(deepseektest.Request) deepseektest.Turn {
		close(arrived)
		return deepseektest.Text(text).WithDelay(delay) // a long one is abandoned when the double closes
	}))
	done := make(chan sigtermOutcome, 1)
	go func() { // joined through done
		res, err := cs.CallTool(context.Background(), toolCall("deepseek_flash", map[string]any{"task": "slow"}))
		done <- sigtermOutcome{res: res, err: err, at: time.Now()}
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached the double")
	}
	stopped := time.Now()
	if code := b.Stop(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0; output:\n%s", code, b.LogBytes())
	}
	select {
	case o := <-done:
		o.stopped = stopped
		return b, o
	case <-time.After(60 * time.Second):
		t.Fatal("the in-flight call never returned after the bridge stopped")
		return nil, sigtermOutcome{}
	}
}

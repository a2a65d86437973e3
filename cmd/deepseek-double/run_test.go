package main

import (
	"bufio"
	"bytes"
	"context"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// start runs Run in the background and returns the base URL from its first
// stdout line; the cleanup cancels it and checks it returned nil.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		err := Run(ctx, args, pw, &stderr)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no first line (%v); stderr: %s; Run: %v", err, stderr.String(), <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want \"listening http://127.0.0.1:PORT\"", line)
	}
	return url
}

func TestDefaultAnswerSaysItIsTheDouble(t *testing.T) {
	t.Parallel()
	url := start(t, "--key", "sk-test-double-key-cmd")
	c := deepseek.NewClient(deepseek.Options{BaseURL: url, APIKey: "sk-test-double-key-cmd", Timeout: 10 * time.Second})
	for range 2 { // no script: every request gets the default answer
		res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "Explain the bridge."})
		if err != nil {
			t.Fatalf("Flash: %v", err)
		}
		if !strings.Contains(res.Answer, "came from the deepseek double") || !strings.Contains(res.Answer, "Explain the bridge.") {
			t.Errorf("Answer %q", res.Answer)
		}
		if res.Usage.PromptTokens < 100 || res.Usage.CompletionTokens < 10 || res.Usage.ReasoningTokens < 1 || res.CostUSD <= 0 {
			t.Errorf("implausible usage %+v cost %v", res.Usage, res.CostUSD)
		}
	}
	bad := deepseek.NewClient(deepseek.Options{BaseURL: url, APIKey: "sk-test-wrong"})
	if _, err := bad.Flash(t.Context(), deepseek.FlashRequest{Task: "x"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong key: %v", err)
	}
}

func TestScriptFileAndDelay(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`[{"text":"scripted one","usage":{"input_tokens":10,"output_tokens":2}},{"side":"openai","status":503},{"text":"scripted two"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := start(t, "--script", script, "--delay-ms", "150")
	c := deepseek.NewClient(deepseek.Options{BaseURL: url, APIKey: deepseektest.DefaultKey, RetryBackoff: time.Millisecond})
	res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
	if err != nil || res.Answer != "scripted one" || res.Usage.PromptTokens != 10 || res.Duration < 150*time.Millisecond {
		t.Errorf("first: %q %+v %v, %v", res.Answer, res.Usage, res.Duration, err)
	}
	res, err = c.Flash(t.Context(), deepseek.FlashRequest{Task: "x"})
	if err != nil || res.Answer != "scripted two" || res.Attempts != 2 {
		t.Errorf("second: %q attempts %d, %v", res.Answer, res.Attempts, err)
	}
}

func TestRunRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badScript := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badScript, []byte(`[{"side":"elsewhere"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--addr", ":0"}, "not a loopback address"},
		{[]string{"--addr", "192.168.1.10:8080"}, "not a loopback address"},
		{[]string{"--addr", "example.com:80"}, "not a loopback address"},
		{[]string{"--addr", "127.0.0.1"}, "missing port"},
		{[]string{"--script", filepath.Join(dir, "missing.json")}, "read --script"},
		{[]string{"--script", badScript}, "unknown side"},
		{[]string{"--delay-ms", "-1"}, "must not be negative"},
		{[]string{"extra"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(t.Context(), tc.args, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run(%q) = %v, want %q", tc.args, err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed %q before refusing", out.String())
			}
		})
	}
	for _, ok := range []string{"127.0.0.1:0", "127.0.0.2:9", "[::1]:0", "localhost:0"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("checkLoopback(%q) = %v", ok, err)
		}
	}
}

func TestHelpDocumentsScriptFormat(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if err := Run(t.Context(), []string{"--help"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	// Asked-for help goes to stdout (so `| less` shows it), nothing to stderr.
	for _, want := range []string{"--script", "tool_calls", "retry_after", "break", "listening http://HOST:PORT", "-delay-ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q on stdout:\n%s", want, out.String())
		}
	}
	if errb.Len() != 0 {
		t.Errorf("--help wrote to stderr: %q", errb.String())
	}
}

// A usage mistake exits 2, a failure to serve 1; neither prints on stdout.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"--bogus"}, 2},
		{[]string{"extra"}, 2},
		{[]string{"--addr", "0.0.0.0:0"}, 2},
		{[]string{"--delay-ms", "-1"}, 2},
		{[]string{"--script", filepath.Join(t.TempDir(), "missing.json")}, 1},
		{[]string{"--addr", taken.Addr().String()}, 1},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(t.Context(), tc.args, &out, &errb)
			if code := exitCode(err); code != tc.code || out.Len() != 0 {
				t.Errorf("Run(%q) = %v: exit %d, want %d; stdout %q", tc.args, err, code, tc.code, out.String())
			}
		})
	}
}

// TestBinaryStopsOnSIGTERM builds the real binary and stops it with SIGTERM.
func TestBinaryStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	testenv.Real(t, "the built binary")
	bin := testenv.Binary(t, "./cmd/deepseek-double")
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	c := deepseek.NewClient(deepseek.Options{BaseURL: url, APIKey: deepseektest.DefaultKey})
	if res, err := c.Flash(t.Context(), deepseek.FlashRequest{Task: "ping"}); err != nil || !strings.Contains(res.Answer, "deepseek double") {
		t.Fatalf("Flash: %q, %v", res.Answer, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
}

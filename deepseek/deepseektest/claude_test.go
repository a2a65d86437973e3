//go:build linux

package deepseektest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
)

// claudeBin is the pinned Claude Code (skipped under -short).
func claudeBin(t *testing.T) string { t.Helper(); return testenv.ClaudeBin(t) }

// TestClaudeCodeDrivesAnthropicSide runs the real Claude Code binary against
// the double: a scripted Bash tool_use is executed and its tool_result comes
// back in the next request, which a Func turn answers from.
func TestClaudeCodeDrivesAnthropicSide(t *testing.T) {
	bin := claudeBin(t)
	s := newDouble(t)
	s.ScriptAnthropic(
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]any{
			"command": "echo hello-from-bash", "description": "Print a greeting",
		})).WithReasoning("The user wants the command run; I will use Bash."),
		deepseektest.Func(func(r deepseektest.Request) deepseektest.Turn {
			return deepseektest.Text("Bash said: " + strings.Join(r.ToolResultTexts(), " | "))
		}),
	)

	home, ws := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "stream-json", "--verbose",
		"--input-format", "stream-json", "--allowedTools", "Bash")
	cmd.Dir = ws
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + home,
		"ANTHROPIC_BASE_URL=" + s.URL() + "/anthropic",
		"ANTHROPIC_AUTH_TOKEN=" + s.Key(),
		"ANTHROPIC_MODEL=deepseek-flash",
		"ANTHROPIC_SMALL_FAST_MODEL=deepseek-flash",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	// Own process group, killed as a whole if the test gives up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start claude: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) // no-op once it exited
	task, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{
		"role": "user", "content": "Run `echo hello-from-bash` with Bash and tell me what it printed.",
	}})
	if _, err := stdin.Write(append(task, '\n')); err != nil {
		t.Fatalf("write task: %v", err)
	}

	var initAt, resultAt time.Duration
	var result map[string]any
	var types []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("stdout line is not JSON: %q", sc.Text())
			continue
		}
		typ, _ := line["type"].(string)
		if sub, _ := line["subtype"].(string); sub != "" && typ == "system" {
			typ += "/" + sub
		}
		if len(types) == 0 || types[len(types)-1] != typ {
			types = append(types, typ)
		}
		switch typ {
		case "system/init":
			initAt = time.Since(start)
		case "result":
			resultAt = time.Since(start)
			result = line
			stdin.Close() // with stream-json input the process exits only once stdin closes
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	exitAt := time.Since(start)
	t.Logf("claude: init after %v, result after %v, exit after %v; stdout types %v", initAt.Round(time.Millisecond),
		resultAt.Round(time.Millisecond), exitAt.Round(time.Millisecond), types)
	if waitErr != nil {
		t.Fatalf("claude exited with %v; stderr:\n%s", waitErr, stderr.String())
	}
	if result == nil {
		t.Fatalf("no result line; stderr:\n%s", stderr.String())
	}
	if result["subtype"] != "success" || result["is_error"] != false {
		t.Errorf("result %v", result)
	}
	if got, _ := result["result"].(string); got != "Bash said: hello-from-bash" {
		t.Errorf("result text %q, want the Func turn's answer built from the tool_result", got)
	}

	all := s.AnthropicRequests()
	scripted := s.ScriptedAnthropicRequests()
	for _, r := range all {
		t.Logf("request %s?%s model=%s stream=%v tools=%v max_tokens=%d messages=%d side=%v scripted=%v bytes=%d",
			r.Path, r.RawQuery, r.Model(), r.Stream(), r.HasTools(), r.MaxTokens(), len(r.Messages()), r.SideRequest, r.Scripted, len(r.Body))
	}
	if len(scripted) != 2 {
		t.Fatalf("%d scripted requests, want 2", len(scripted))
	}
	if _, pending := s.Pending(); pending != 0 {
		t.Errorf("%d Anthropic turns left", pending)
	}
	first, second := scripted[0], scripted[1]
	for _, r := range scripted {
		if r.Path != "/anthropic/v1/messages" || r.RawQuery != "beta=true" || !r.Stream() || r.Model() != "deepseek-flash" ||
			r.Header.Get("Authorization") != "Bearer "+s.Key() {
			t.Errorf("request %s?%s stream=%v model=%q auth=%q", r.Path, r.RawQuery, r.Stream(), r.Model(), r.Header.Get("Authorization"))
		}
	}
	if !strings.Contains(first.LastUserText(), "hello-from-bash") {
		t.Errorf("first request does not carry the task: %q", first.LastUserText())
	}
	if got := second.ToolResultTexts(); len(got) != 1 || !strings.Contains(got[0], "hello-from-bash") {
		t.Errorf("second request tool results %q, want the Bash output", got)
	}
	// The thinking block (with its signature) and the tool_use go back as the assistant turn.
	msgs := second.Messages()
	if len(msgs) < 3 {
		t.Fatalf("second request has %d messages", len(msgs))
	}
	assistant, _ := json.Marshal(msgs[len(msgs)-2])
	for _, want := range []string{`"type":"thinking"`, `"signature":"double-signature-`, `"type":"tool_use"`, `"name":"Bash"`} {
		if !bytes.Contains(assistant, []byte(want)) {
			t.Errorf("assistant turn sent back lacks %s: %s", want, assistant)
		}
	}
	// DEEPSEEKTEST_DUMP=DIR keeps the request bodies for study.
	if d := os.Getenv("DEEPSEEKTEST_DUMP"); d != "" {
		for i, r := range all {
			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("%02d%s.json", i, strings.ReplaceAll(r.Path, "/", "_"))), r.Body, 0o600)
		}
	}
	if len(all) != len(scripted) {
		t.Logf("Claude Code made %d side requests besides the scripted ones", len(all)-len(scripted))
	}
}

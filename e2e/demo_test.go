package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/cmd/bridge-demo/demo"
)

// TestDemo runs `bridge-demo` (what `make demo` runs) against freshly built
// binaries: it must print the double's answer as it came back through the MCP
// endpoint, with usage, and leave no process behind.
func TestDemo(t *testing.T) {
	t.Parallel()
	bins := filepath.Dir(binary(t, "bridge"))
	binary(t, "deepseek-double")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "bridge-demo"), "--bin-dir", bins, "--claude-bin", claudeBin(t))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()} // no key, no secret: a fresh machine
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bridge-demo: %v\n%s", err, out.Bytes())
	}
	text := out.String()
	t.Logf("demo output:\n%s", text)
	for _, want := range []string{
		demo.FlashAnswer,
		"ok: the answer came from the DeepSeek double through the bridge's MCP endpoint",
		"usage: 1200 prompt tokens (1024 cache hit, 176 miss), 90 completion tokens (41 reasoning)",
		"no process of the demo is left",
		"answer.txt holds the witness reversed, byte for byte",
		`"status": "done"`,
		"its settings: the per-user .env of a throwaway config home",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if strings.Contains(text, "The reader wants one sentence") {
		t.Errorf("demo output shows the reasoning_content")
	}
	// Every process the demo named is gone.
	pids := regexp.MustCompile(`\(pid (\d+)\)`).FindAllStringSubmatch(text, -1)
	if len(pids) < 2 {
		t.Errorf("demo named %d processes, want the double and the bridge", len(pids))
	}
	for _, m := range pids {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d named by the demo is still there (kill 0: %v)", pid, err)
		}
	}
}

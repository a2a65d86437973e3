// Command bridge-demo runs the bridge end to end on loopback with no DeepSeek
// key: it starts the DeepSeek double and `bridge serve` on free ports, calls
// the bridge's tools through an mcp-go client, prints what came
// back, and shuts everything down. `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/cmd/bridge-demo/demo"
)

func main() {
	binDir := flag.String("bin-dir", "bin", "directory holding the bridge and deepseek-double binaries")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	claude := flag.String("claude-bin", "", "Claude Code binary for the agent step (default: the pinned install, .cache/bin/claude next to the bin dir, from scripts/install.sh claude)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := demo.Run(ctx, demo.Options{BinDir: *binDir, ClaudeBin: *claude, Timeout: *timeout, Out: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge-demo:", err)
		os.Exit(1)
	}
}

// Command bridgectl runs, rotates, tunnels and inspects the bridge from a
// terminal. The work is done by package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/cmd/bridgectl/cli"
)

// version is set at build time like the daemon's: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	cli.Version = version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.NewEnv(os.Stdin, os.Stdout, os.Stderr, os.Environ()), os.Args[1:])
	stop()
	os.Exit(code)
}

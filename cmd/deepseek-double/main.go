// Command deepseek-double serves the DeepSeek API double on loopback for
// demos and benchmarks; see package deepseektest for the script format.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deepseek-double:", err)
	}
	stop()
	os.Exit(exitCode(err))
}

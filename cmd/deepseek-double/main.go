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
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "deepseek-double:", err)
		os.Exit(2)
	}
}

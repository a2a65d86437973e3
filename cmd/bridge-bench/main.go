// Command bridge-bench runs `make bench`: it measures what the bridge itself
// costs against the DeepSeek double (see package bench) and prints one table.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/bench"
)

// maxRun bounds the whole run; `make bench` must finish in under 5 minutes.
const maxRun = 4 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := bench.DefaultOptions()
	fs := flag.NewFlagSet("bridge-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.BridgeBin, "bridge", "bin/bridge", "the bridge binary")
	fs.StringVar(&o.DoubleBin, "double", "bin/deepseek-double", "the deepseek-double binary")
	fs.StringVar(&o.HarnessBin, "harness", "bin/bench-standin", "the stand-in harness binary (bench/standin)")
	fs.StringVar(&o.MinProxyBin, "minproxy", "bin/bench-minproxy", "the minimal proxy binary (bench/minproxy), the floor of the CPU ratio")
	fs.DurationVar(&o.CellDuration, "cell", o.CellDuration, "measured time of each flash latency cell")
	fs.DurationVar(&o.SaturationDuration, "saturation", o.SaturationDuration, "measured time of the throughput run")
	fs.IntVar(&o.SaturationClients, "saturation-clients", o.SaturationClients, "clients of the throughput run")
	fs.IntVar(&o.HeldPolls, "held", o.HeldPolls, "concurrent long-polls to hold")
	fs.IntVar(&o.IdleProcs, "idle-procs", o.IdleProcs, "idle processes started for the second measure of the bridge's CPU per agent job (0: skip it)")
	fs.StringVar(&o.ProfileDir, "profile", "", "directory for pprof profiles of the bridge (CPU at the highest concurrency, heap and goroutines while polls are held)")
	clients := fs.String("clients", "1,8,64", "comma-separated client counts of the flash latency cells")
	markdown := fs.Bool("markdown", false, "print the table as Markdown (for docs/PERFORMANCE.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.Concurrency = nil
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("--clients %q: want counts from 1 to 1000, comma-separated", *clients)
		}
		o.Concurrency = append(o.Concurrency, n)
	}
	if o.IdleProcs < 0 || o.IdleProcs > 20000 {
		return fmt.Errorf("--idle-procs %d: want 0 to 20000", o.IdleProcs)
	}
	if o.HeldPolls < 1 || o.SaturationClients < 1 {
		return fmt.Errorf("--held and --saturation-clients must be at least 1")
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return err
		}
	}
	o.Progress = stderr
	ctx, cancel := context.WithTimeout(ctx, maxRun)
	defer cancel()
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	if *markdown {
		rep.Markdown(stdout)
	} else {
		rep.Text(stdout)
	}
	for _, p := range rep.Profiles {
		fmt.Fprintf(stderr, "profile: %s (go tool pprof -top %s)\n", p, p)
	}
	return nil
}

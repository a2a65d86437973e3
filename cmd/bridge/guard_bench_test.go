package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// BenchmarkGuardPrepare is what the guard adds to every job's spawn: writing
// the three harness files. It reports the median and p99 per job.
func BenchmarkGuardPrepare(b *testing.B) {
	f := newGuardFixture(b, nil, nil)
	ws := filepath.Join(f.root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	took := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		spec := harness.Spec{JobID: fmt.Sprintf("%032x", i), Workspace: ws}
		start := time.Now()
		if err := f.g.prepare(b.Context(), &spec); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	if n := len(took); n > 0 {
		b.ReportMetric(float64(took[n/2].Microseconds())/1000, "median-ms")
		b.ReportMetric(float64(took[min(n-1, n*99/100)].Microseconds())/1000, "p99-ms")
	}
}

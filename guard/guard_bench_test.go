package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// BenchmarkGuardPrepare is what the guard adds to every job's spawn: writing
// the three harness files and, alongside, looking through the workspace for
// its secret files — in an empty workspace and in one of 5,000 source files
// (280 directories, plus a node_modules of 2,500 files the walk skips). It
// reports the median and p99 per job.
func BenchmarkGuardPrepare(b *testing.B) {
	for _, bc := range []struct {
		name  string
		files int
	}{{"empty workspace", 0}, {"5000 files", 5000}} {
		b.Run(bc.name, func(b *testing.B) { benchPrepare(b, bc.files) })
	}
}

func benchPrepare(b *testing.B, files int) {
	f := newGuardFixture(b, nil, nil)
	ws := filepath.Join(f.root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range files {
		for _, rel := range []string{
			fmt.Sprintf("pkg%02d/sub%02d/file%04d.go", i%40, i%7, i),
			fmt.Sprintf("node_modules/dep%03d/lib/f%04d.js", i%100, i),
		} {
			if strings.HasPrefix(rel, "node_modules") && i >= files/2 {
				continue
			}
			p := filepath.Join(ws, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("KEY=test-secret-0123456789abcdef\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	took := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		spec := harness.Spec{JobID: fmt.Sprintf("%032x", i), Workspace: ws}
		start := time.Now()
		if err := f.g.Prepare(b.Context(), &spec); err != nil {
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

package changes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// BenchmarkOverlayRecord is what the exact record adds to a job's start and
// end in a git repository of RECORD_BENCH_FILES files (200,000 by default,
// in 2,000 folders): the start (the overlay's dirs and start record) and the
// end (reading an upper dir of 20 changed files, holding, git's ignore
// check, the diff, landing). The secret-file walk, which every job's start
// still runs (bounded at sandbox.DefaultSecretScanLimit entries), is
// reported apart as walk-p50-ms. Each reports its median over the runs.
func BenchmarkOverlayRecord(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("RECORD_BENCH_FILES")); err == nil && v > 0 {
		n = v
	}
	ws := benchWorkspace(b, n)
	var start, end, walk []time.Duration
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), "changes")
		t0 := time.Now()
		if _, err := sandbox.WorkspaceScan(ws, sandbox.DefaultSecretScanLimit, true); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := StartOverlay(dir, OverlayStart{Workspace: ws, Land: LandAuto}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		b.StopTimer()
		upper := OverlayOf(dir, ws).Upper
		for k := range 20 {
			p := filepath.Join(upper, fmt.Sprintf("d%04d", k*97), fmt.Sprintf("f%03d.go", k))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, fmt.Appendf(nil, "package x // run %d\n", i), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		// The job's end is after its start: the files it changes are not
		// the owner's edits during it.
		st, _ := LoadOverlayStart(dir)
		st.Started = st.Started.Add(-time.Hour)
		_ = writeJSONFile(filepath.Join(dir, OverlayStartFile), st)
		b.StartTimer()
		t3 := time.Now()
		rep, err := FromOverlay(b.Context(), ws, dir, testGit, true)
		if err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		if len(rep.Changes) != 20 || rep.Held != 0 {
			b.Fatalf("record: %d changes, %d held", len(rep.Changes), rep.Held)
		}
		walk, start, end = append(walk, t1.Sub(t0)), append(start, t2.Sub(t1)), append(end, t4.Sub(t3))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(start), "start-p50-ms")
	b.ReportMetric(p50(end), "end-p50-ms")
	b.ReportMetric(p50(walk), "walk-p50-ms")
	b.ReportMetric(float64(n), "files")
}

// benchWorkspace is a committed git repository of n one-line files.
func benchWorkspace(b *testing.B, n int) string {
	b.Helper()
	ws := b.TempDir()
	for i := range n {
		d := filepath.Join(ws, fmt.Sprintf("d%04d", i%2000))
		if i < 2000 {
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.go", i/2000)), []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@e", "commit", "-q", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return ws
}

package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `logs --tunnel` with no tunnel log points at `bridgectl tunnel`.
func TestLogsTunnelPointsAtTunnel(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	out := te.must("logs", "--tunnel")
	if !strings.Contains(out, "`bridgectl tunnel`") || strings.Contains(out, "`bridgectl start`") {
		t.Errorf("logs --tunnel without a tunnel:\n%s", out)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *strings.Reader
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// tailLines reads a log from its end: the last lines of a big log cost a
// block or two, not the whole file.
func TestTailLinesReadsFromTheEnd(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 { // ~12 MB
		fmt.Fprintf(&b, `{"level":"info","message":"line %06d of a long log"}`+"\n", i)
	}
	big := b.String()
	want := strings.Split(strings.TrimSuffix(big, "\n"), "\n")
	tests := []struct {
		name    string
		data    string
		n       int
		want    []string
		maxRead int64
	}{
		{"last 50 of a big log", big, 50, want[len(want)-50:], 2 * tailBlock},
		{"no final newline", "a\nb\nc", 2, []string{"b", "c"}, 5},
		{"fewer lines than asked", "a\nb\n", 50, []string{"a", "b"}, 4},
		{"zero", big, 0, nil, 0},
		// Read up to the bound, rounded up to a block: 4 blocks here.
		{"a huge last line is cut at its start", strings.Repeat("x", 10<<20) + "\nend\n", 2,
			[]string{"…" + strings.Repeat("x", 4*tailBlock-len("\nend\n")), "end"}, 4 * tailBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countingReader{r: strings.NewReader(tt.data)}
			got, err := tailLines(r, int64(len(tt.data)), tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %d lines (first %.80q), want %d (first %.80q)", len(got), first(got), len(tt.want), first(tt.want))
			}
			if r.n > tt.maxRead {
				t.Errorf("read %d bytes, want at most %d", r.n, tt.maxRead)
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// `bridgectl logs -n N` prints the last N lines of a big log.
func TestLogsPrintsTheEndOfABigLog(t *testing.T) {
	te := newTestEnv(t)
	os.MkdirAll(te.state, 0o700)
	f, err := os.Create(filepath.Join(te.state, "bridge.log"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range 100_000 {
		fmt.Fprintf(w, "log line %d\n", i)
	}
	w.Flush()
	f.Close()
	out := te.must("logs", "-n", "3")
	if out != "log line 99997\nlog line 99998\nlog line 99999\n" {
		t.Errorf("logs -n 3 = %q", out)
	}
}

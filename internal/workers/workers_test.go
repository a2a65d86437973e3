package workers

import (
	"sync/atomic"
	"testing"
)

// Every index is done exactly once, on no more goroutines than asked.
func TestEach(t *testing.T) {
	for _, c := range []struct{ n, k int }{{0, 4}, {1, 4}, {10, 1}, {1000, 4}, {3, 0}} {
		seen := make([]atomic.Int32, c.n)
		var running, most atomic.Int32
		Each(c.n, c.k, func(i int) {
			r := running.Add(1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			seen[i].Add(1)
			running.Add(-1)
		})
		for i := range seen {
			if got := seen[i].Load(); got != 1 {
				t.Fatalf("n=%d k=%d: index %d done %d times", c.n, c.k, i, got)
			}
		}
		if int(most.Load()) > max(c.k, 1) {
			t.Fatalf("n=%d k=%d: %d at once", c.n, c.k, most.Load())
		}
	}
}

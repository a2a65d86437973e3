package heapwatch

import (
	"testing"
)

// A heap that grows past the bound calls over, and Stop reports the peak.
func TestWatchSeesGrowth(t *testing.T) {
	called := make(chan struct{})
	w := Start(1<<20, func() { close(called) })
	keep := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		keep = append(keep, make([]byte, 1<<20))
		for j := range keep[i] {
			keep[i][j] = byte(j)
		}
	}
	<-called
	base, peak := w.Stop()
	if peak < base+(1<<20) {
		t.Fatalf("peak %d, base %d: growth not seen", peak, base)
	}
	_ = keep[63][0]
}

// Package heapwatch samples the Go heap in use while a test runs something
// that must stay bounded (an endless upstream, an endless line), and stops
// it once the heap has grown past the bound, before it takes the machine.
// HeapInuse is process-wide: tests that use it do not run in parallel.
package heapwatch

import (
	"runtime"
	"sync"
	"time"
)

// Interval is how often the heap is sampled.
const Interval = 5 * time.Millisecond

// Watch samples the heap in use from Start until Stop.
type Watch struct {
	base  uint64
	mu    sync.Mutex
	peak  uint64
	stop  chan struct{}
	ended chan struct{}
}

// Start collects garbage, takes the base, and samples every Interval;
// once the heap in use passes base+bound it calls over (once; nil: no call).
func Start(bound uint64, over func()) *Watch {
	runtime.GC()
	w := &Watch{base: HeapInuse(), stop: make(chan struct{}), ended: make(chan struct{})}
	w.peak = w.base
	go func() { // owner: the Watch; joined by Stop
		defer close(w.ended)
		tick := time.NewTicker(Interval)
		defer tick.Stop()
		called := false
		for {
			h := HeapInuse()
			w.mu.Lock()
			w.peak = max(w.peak, h)
			p := w.peak
			w.mu.Unlock()
			if p > w.base+bound && !called && over != nil {
				called = true
				over()
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// Stop ends the sampling and returns the base and the peak seen.
func (w *Watch) Stop() (base, peak uint64) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.ended
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.base, max(w.peak, HeapInuse())
}

// HeapInuse is runtime.MemStats.HeapInuse now.
func HeapInuse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

package poll

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		if !Until(time.Second, func() bool { n++; return n == 3 }) {
			t.Fatal("Until gave up on a condition that held at the third check")
		}
		if got := time.Since(start); got != 2*Interval {
			t.Errorf("held after %v, want %v", got, 2*Interval)
		}
		start = time.Now()
		if Until(time.Second, func() bool { return false }) {
			t.Fatal("Until reported a condition that never held")
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("gave up after %v, want the limit %v", got, time.Second)
		}
	})
}

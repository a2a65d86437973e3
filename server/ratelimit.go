package server

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// callLimiter is the one global bucket for tools/call: perMinute tokens a
// minute, burst perMinute. A request takes all the tokens its calls need at
// once or none.
type callLimiter struct {
	lim       *rate.Limiter
	perMinute int
	now       func() time.Time
}

func newCallLimiter(perMinute int, now func() time.Time) *callLimiter {
	return &callLimiter{
		lim:       rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute),
		perMinute: perMinute,
		now:       now,
	}
}

// take reserves n tokens atomically. When they are not all there it takes
// none and says how long until they would be.
func (l *callLimiter) take(n int) (ok bool, wait time.Duration) {
	now := l.now()
	if l.lim.AllowN(now, n) {
		return true, 0
	}
	if n > l.perMinute {
		return false, time.Minute
	}
	missing := float64(n) - l.lim.TokensAt(now)
	secs := missing / (float64(l.perMinute) / 60)
	return false, time.Duration(math.Ceil(secs * float64(time.Second)))
}

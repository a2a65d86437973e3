package server

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
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

// maxHintBytes bounds each client hint in a log line (a header may be 64 KiB).
const maxHintBytes = 256

// clientHints are what a proxy in front of the bridge says about the caller:
// Cloudflare's CF-Connecting-IP and the X-Forwarded-For chain. They go into
// a rate-limited call's log line, so an owner can see whether one holder of
// the URL is using up the bucket. Anyone who holds the URL can send either
// header, and without a tunnel nothing strips a forged one, so they are
// logged under names that say "unverified" and never touch the limit, which
// is one bucket for everyone.
func clientHints(ev *zerolog.Event, h http.Header) *zerolog.Event {
	for _, hint := range []struct{ header, field string }{
		{"CF-Connecting-IP", "unverified_cf_connecting_ip"},
		{"X-Forwarded-For", "unverified_x_forwarded_for"},
	} {
		if v := strings.Join(h.Values(hint.header), ", "); v != "" {
			ev = ev.Str(hint.field, harness.Clip(v, maxHintBytes))
		}
	}
	return ev
}

// Package backoff decides how long to wait before retrying an HTTP call and
// waits that long: it reads a Retry-After header (delay-seconds or an
// HTTP-date), computes a capped exponential backoff, and sleeps unless a
// context ends first. The DeepSeek client and the model proxy both use it.
package backoff

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps what RetryAfter returns, so an absurd header can neither
// overflow a Duration nor an int of seconds on a 32-bit platform. Every caller
// compares the wait with a budget far below it.
const MaxRetryAfter = (1<<31 - 1) * time.Second

// RetryAfter reads a Retry-After value (RFC 9110 §10.2.3): delay-seconds (a
// non-negative integer) or an HTTP-date, which counts from now and is 0 when
// it has passed. ok is false when v is empty or neither form.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > uint64(MaxRetryAfter/time.Second) { // only overflow is left
			return MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Exponential is the wait before retry number attempt (1 for the first):
// base, doubling per attempt, never above limit.
func Exponential(base, limit time.Duration, attempt int) time.Duration {
	if base <= 0 || base >= limit {
		return limit
	}
	d := base
	for i := 1; i < attempt; i++ {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return d
}

// Sleep waits d unless ctx ends first, and reports whether all of d passed
// with ctx still live. d ≤ 0 returns at once.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

package backoff

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name, v string
		want    time.Duration
		ok      bool
	}{
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"seconds", "7", 7 * time.Second, true},
		{"seconds with spaces", " 120 ", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"HTTP-date ahead", date(90 * time.Second), 90 * time.Second, true},
		{"HTTP-date passed", date(-time.Hour), 0, true},
		{"RFC 850 date", now.Add(30 * time.Second).Format("Monday, 02-Jan-06 15:04:05 GMT"), 30 * time.Second, true},
		{"huge seconds are capped", "99999999999999999999999", MaxRetryAfter, true},
		{"far date is capped", "Fri, 31 Dec 9999 23:59:59 GMT", MaxRetryAfter, true},
		{"negative", "-5", 0, false},
		{"decimal", "1.5", 0, false},
		{"words", "soon", 0, false},
		{"Inf", "Inf", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RetryAfter(tt.v, now)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("RetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestExponential(t *testing.T) {
	tests := []struct {
		base, limit time.Duration
		attempt     int
		want        time.Duration
	}{
		{time.Second, 16 * time.Second, 1, time.Second},
		{time.Second, 16 * time.Second, 0, time.Second},
		{time.Second, 16 * time.Second, 2, 2 * time.Second},
		{time.Second, 16 * time.Second, 5, 16 * time.Second},
		{time.Second, 16 * time.Second, 6, 16 * time.Second},
		{time.Second, 16 * time.Second, 1 << 30, 16 * time.Second}, // no overflow
		{500 * time.Millisecond, 8 * time.Second, 4, 4 * time.Second},
		{3 * time.Second, 8 * time.Second, 3, 8 * time.Second}, // 12 s capped
		{20 * time.Second, 8 * time.Second, 1, 8 * time.Second},
		{0, 8 * time.Second, 1, 8 * time.Second},
	}
	for _, tt := range tests {
		if got := Exponential(tt.base, tt.limit, tt.attempt); got != tt.want {
			t.Errorf("Exponential(%v, %v, %d) = %v, want %v", tt.base, tt.limit, tt.attempt, got, tt.want)
		}
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(t.Context(), 5*time.Second) || time.Since(start) != 5*time.Second {
			t.Fatalf("full sleep: %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Minute) || time.Since(start) != 2*time.Second {
			t.Fatalf("ctx ended after 2 s: slept %v", time.Since(start))
		}
		if Sleep(ctx, 0) {
			t.Fatal("d = 0 with an ended ctx reported true")
		}
		if !Sleep(t.Context(), 0) || !Sleep(t.Context(), -time.Second) {
			t.Fatal("d ≤ 0 with a live ctx reported false")
		}
	})
}

package modelproxy

import (
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// An unreadable spend file is handled alike at start and at the midnight
// rollover: the proxy runs, the file is kept aside as <file>.unreadable, and
// with a daily ceiling every model call that day is refused (the ceiling
// cannot be enforced); without one the day counts from zero.
func TestUnreadableSpendFile(t *testing.T) {
	for _, c := range []struct {
		name     string
		rollover bool
		ceiling  float64
	}{
		{"at start, daily ceiling", false, 5},
		{"at rollover, daily ceiling", true, 5},
		{"at start, no daily ceiling", false, 0},
		{"at rollover, no daily ceiling", true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := statedir.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			now := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			day := "2026-11-29"
			if c.rollover {
				day = "2026-11-30"
			}
			bad := dir.SpendFile(day)
			if err := os.WriteFile(bad, []byte("{torn"), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs syncbuf.Buffer
			log := zerolog.New(&logs)
			up := newUpstream(t)
			p := startProxy(t, up, Options{DailyMaxCostUSD: c.ceiling, StateDir: dir, Clock: clock, Logger: &log})
			if c.rollover {
				mu.Lock()
				now = now.Add(2 * time.Hour)
				mu.Unlock()
			}
			tok := open(t, p, "job-1")
			a := call(t, p, "/v1/messages", "bearer", tok, msgBody)
			if _, err := os.Stat(bad + ".unreadable"); err != nil {
				t.Errorf("the unreadable file was not kept aside: %v", err)
			}
			if !strings.Contains(logs.String(), bad+".unreadable") {
				t.Errorf("log does not name the file: %s", logs.String())
			}
			if c.ceiling == 0 {
				if a.status != http.StatusOK {
					t.Fatalf("status %d: %s", a.status, a.body)
				}
				if u := p.DailyUsage(); u.InputTokens != 1 {
					t.Errorf("daily usage %+v, want counted from zero", u)
				}
				return
			}
			_, msg := anthropicError(t, a.body)
			if a.status != http.StatusPaymentRequired || !strings.HasPrefix(msg, "daily spend unknown: the daily spend file "+bad+".unreadable") {
				t.Fatalf("status %d message %q", a.status, msg)
			}
			for _, want := range []string{"BRIDGE_DAILY_MAX_COST_USD", "00:00 UTC", "restart"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if n := len(up.requests()); n != 0 {
				t.Errorf("%d calls reached the upstream", n)
			}
		})
	}
}

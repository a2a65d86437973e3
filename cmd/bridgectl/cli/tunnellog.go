package cli

import (
	"regexp"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

// tunnelLog is what the scraper found in cloudflared's log after the latest start marker.
type tunnelLog struct {
	URL        string   // https://NAME.trycloudflare.com (quick tunnels)
	Registered int      // "Registered tunnel connection" lines
	Errors     []string // ERR lines, newest last (at most 5)
}

// quickURL matches a quick tunnel's hostname. api.trycloudflare.com (named in
// cloudflared's own errors) is not one.
var quickURL = regexp.MustCompile(`https://([a-z0-9]+(?:-[a-z0-9]+)*)\.trycloudflare\.com\b`)

// scanTunnelLog reads cloudflared's log lines.
func scanTunnelLog(log []byte) tunnelLog {
	var t tunnelLog
	for _, l := range lines(daemonctl.AfterLatestMarker(log, "tunnel")) {
		for _, m := range quickURL.FindAllStringSubmatch(l, -1) {
			if m[1] != "api" {
				t.URL = m[0]
			}
		}
		if strings.Contains(l, "Registered tunnel connection") ||
			(strings.Contains(l, "Connection ") && strings.Contains(l, " registered")) {
			t.Registered++
		}
		if isErrLine(l) {
			t.Errors = append(t.Errors, strings.TrimSpace(l))
			if len(t.Errors) > 5 {
				t.Errors = t.Errors[1:]
			}
		}
	}
	return t
}

func isErrLine(l string) bool {
	return strings.Contains(l, " ERR ") || strings.HasPrefix(l, "ERR ") ||
		strings.Contains(l, " FTL ") || strings.Contains(l, "level=error") || strings.Contains(l, "level=fatal")
}

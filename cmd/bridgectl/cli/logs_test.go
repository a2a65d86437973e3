package cli

import (
	"strings"
	"testing"
)

// `logs --tunnel` with no tunnel log points at `bridgectl tunnel`.
func TestLogsTunnelPointsAtTunnel(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	out := te.must("logs", "--tunnel")
	if !strings.Contains(out, "`bridgectl tunnel`") || strings.Contains(out, "`bridgectl start`") {
		t.Errorf("logs --tunnel without a tunnel:\n%s", out)
	}
}

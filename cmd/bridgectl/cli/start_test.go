package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// `start` names the log the daemon writes: BRIDGE_LOG_FILE when set.
func TestStartNamesTheLogFile(t *testing.T) {
	te := newTestEnv(t)
	logFile := filepath.Join(te.dir, "custom.log")
	te.appendEnv("BRIDGE_LOG_FILE=" + logFile)
	out := te.must("start")
	if !strings.Contains(out, "log: "+logFile) || strings.Contains(out, "log: "+filepath.Join(te.state, "bridge.log")) {
		t.Errorf("start with BRIDGE_LOG_FILE:\n%s", out)
	}
	te.must("stop")
	te.dropEnvLine("BRIDGE_LOG_FILE=")
	if out := te.must("start"); !strings.Contains(out, "log: "+filepath.Join(te.state, "bridge.log")) {
		t.Errorf("start without BRIDGE_LOG_FILE:\n%s", out)
	}
}

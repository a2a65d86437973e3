package cli

import (
	"strings"
	"testing"
)

// After `secret` without a reload, url prints the note status
// prints, and smoke does not send the user to the same wrong URL.
func TestURLAndSmokeNoteEnvChanged(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	if out := te.must("url"); strings.Contains(out, "note:") {
		t.Fatalf("url right after start:\n%s", out)
	}
	te.backdateStart()
	te.must("secret")
	note := te.envFile + " changed after the daemon started"
	for _, args := range [][]string{{"url"}, {"url", "--show"}, {"status"}} {
		out := te.must(args...)
		if !strings.Contains(out, note) || !strings.Contains(out, "`bridgectl reload`") {
			t.Errorf("%v after secret without reload lacks the note:\n%s", args, out)
		}
	}
	out, errs, code := te.run("smoke", "--no-flash")
	if code != 1 || !strings.Contains(out, note) || !strings.Contains(out, "`bridgectl reload`") || strings.Contains(out, "(`bridgectl url`)") {
		t.Errorf("smoke after secret without reload: exit %d\n%s%s", code, out, errs)
	}
	te.must("reload")
	if out := te.must("url"); strings.Contains(out, "note:") {
		t.Errorf("url after reload still notes a change:\n%s", out)
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
)

// Tests for the defects a newcomer review found (one test per item).

// appendEnv adds lines to the test's .env file.
func (te *testEnv) appendEnv(lines ...string) {
	te.t.Helper()
	f, err := os.OpenFile(te.envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		te.t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			te.t.Fatal(err)
		}
	}
}

// dropEnvLine removes every line of the .env file that starts with prefix.
func (te *testEnv) dropEnvLine(prefix string) {
	te.t.Helper()
	b, err := os.ReadFile(te.envFile)
	if err != nil {
		te.t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, prefix) {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(te.envFile, []byte(strings.Join(kept, "")), 0o600); err != nil {
		te.t.Fatal(err)
	}
}

// Item 1: `approval` reports the running daemon's mode (daemon.json's boot
// mode and the flag), not the config on disk, and says when they differ.
func TestApprovalReportsTheDaemonsMode(t *testing.T) {
	w := newApprovalWorld(t)
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	w.must("start")
	w.dropEnvLine("BRIDGE_CC_APPROVAL=")

	out := w.must("approval")
	for _, want := range []string{"human approval is OFF", "started with BRIDGE_CC_APPROVAL=off", "`bridgectl restart`"} {
		if !strings.Contains(out, want) {
			t.Errorf("approval lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "human approval is on") {
		t.Errorf("approval reports the config on disk, not the daemon:\n%s", out)
	}
	out, errs, code := w.run("approval", "on")
	if code != 1 {
		t.Fatalf("approval on while the daemon booted off: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"not what turns it off", "BRIDGE_CC_APPROVAL=off", "`bridgectl restart`", "still OFF"} {
		if !strings.Contains(errs, want) {
			t.Errorf("approval on lacks %q:\n%s", want, errs)
		}
	}

	// Config back to off, daemon restarted with it: nothing differs, no note.
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	w.must("restart")
	if out := w.must("approval"); strings.Contains(out, "restart") || !strings.Contains(out, "human approval is OFF") {
		t.Errorf("approval with the daemon and the config agreeing:\n%s", out)
	}

	// The other way round: the daemon booted on, the config now says off.
	w.dropEnvLine("BRIDGE_CC_APPROVAL=")
	w.must("restart")
	w.appendEnv("BRIDGE_CC_APPROVAL=off")
	out = w.must("approval")
	if !strings.HasPrefix(out, "human approval is on") || !strings.Contains(out, "`bridgectl restart` would turn it OFF") {
		t.Errorf("approval with the config now off:\n%s", out)
	}
	// The flag still turns a daemon that booted on off, and on again.
	w.must("approval", "off")
	if !approvals.ApprovalOff(w.dir) || !strings.Contains(w.must("approval"), "human approval is OFF (approval-off flag") {
		t.Errorf("approval after approval off:\n%s", w.must("approval"))
	}
}

// backdateStart makes the running daemon's daemon.json say it started a
// minute ago, so a .env written now is newer than the daemon.
func (te *testEnv) backdateStart() {
	te.t.Helper()
	var info map[string]any
	if err := json.Unmarshal([]byte(te.readFile("daemon.json")), &info); err != nil {
		te.t.Fatal(err)
	}
	info["started_at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(te.state, "daemon.json"), b, 0o600); err != nil {
		te.t.Fatal(err)
	}
}

// Item 2: after `secret` without a reload, url prints the note status
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

// Item 3: a prefix of an already decided request says what happened to it,
// as the full id does, not "unknown approval id".
func TestApprovePrefixOfDecidedRequest(t *testing.T) {
	w := newApprovalWorld(t)
	r, ch := w.submit(t, jobA, bash("make install"), time.Minute)
	w.must("approve", r.ID)
	decision(t, ch)
	for _, cmd := range []string{"approve", "deny"} {
		for _, id := range []string{r.ID, r.ID[:8]} {
			_, errs, code := w.run(cmd, id)
			if code != 1 || !strings.Contains(errs, "already decided") || !strings.Contains(errs, "approved by") || strings.Contains(errs, "unknown approval id") {
				t.Errorf("%s %s of a decided request: exit %d %q", cmd, id, code, errs)
			}
		}
	}
	// A prefix nothing has: unknown, and where to look.
	if _, errs, code := w.run("approve", "0123456789"); code != 1 || !strings.Contains(errs, "bridgectl pending") {
		t.Errorf("approve of an unknown prefix: exit %d %q", code, errs)
	}
}

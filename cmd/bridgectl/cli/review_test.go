package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
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

// writeJobs puts snapshots into the test's state dir.
func (te *testEnv) writeJobs(snaps ...jobs.Snapshot) statedir.Dir {
	te.t.Helper()
	dir, err := statedir.Open(te.state)
	if err != nil {
		te.t.Fatal(err)
	}
	for _, s := range snaps {
		if err := statedir.WriteJSON(dir.JobFile(s.ID), s); err != nil {
			te.t.Fatal(err)
		}
	}
	return dir
}

// Items 4 and 11: `job kill` writes for the owner, with an exit code per
// outcome; `jobs ID` and `job kill ID` take a unique prefix.
func TestJobKillForTheOwnerAndPrefixes(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-90 * time.Second).UTC()
	ended := t0.Add(time.Minute)
	running := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0123abcd" + strings.Repeat("1", 24), Status: jobs.StatusRunning, Task: "reverse witness.txt",
		Workspace: "/srv/ws", CreatedAt: t0, MaxSteps: 120, Steps: 3, LastTool: "Bash"}
	done := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "4567cdef" + strings.Repeat("2", 24), Status: jobs.StatusDone, Task: "older task",
		Workspace: "/srv/ws", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120, Steps: 5, Result: "all good", Nonce: "n0nce"}
	twinA := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "cafebabe" + strings.Repeat("a", 24), Status: jobs.StatusQueued, Task: "twin a", CreatedAt: t0, MaxSteps: 120}
	twinB := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "cafebabe" + strings.Repeat("b", 24), Status: jobs.StatusDone, Task: "twin b", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120}
	dir := te.writeJobs(running, done, twinA, twinB)

	// jobs ID: a unique prefix; an ambiguous one lists the matches; a short one says what an id is.
	if out := te.must("jobs", running.ID[:8]); !strings.Contains(out, "job:        "+running.ID) {
		t.Errorf("jobs PREFIX:\n%s", out)
	}
	out, errs, code := te.run("jobs", "cafebabe")
	if code != 2 || !strings.Contains(errs, twinA.ID) || !strings.Contains(errs, twinB.ID) || !strings.Contains(errs, "twin a") {
		t.Errorf("jobs AMBIGUOUS: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := te.run("jobs", "0123"); code != 2 || !strings.Contains(errs, "8 or more") {
		t.Errorf("jobs SHORT: exit %d %q", code, errs)
	}
	if _, errs, code := te.run("jobs", "deadbeef"); code != 1 || !strings.Contains(errs, "`bridgectl jobs`") {
		t.Errorf("jobs UNKNOWN-PREFIX: exit %d %q", code, errs)
	}

	te.must("start")
	// A running job, by prefix: cancelled, said for the owner.
	out, errs, code = te.run("job", "kill", running.ID[:8])
	if code != 0 || !strings.Contains(out, "cancelled job "+running.ID) || !strings.Contains(out, "was running") || !strings.Contains(out, "3 tool calls") || !strings.Contains(out, "elapsed") {
		t.Errorf("job kill RUNNING: exit %d\n%s%s", code, out, errs)
	}
	for _, modelText := range []string{"nonce", "deepseek_agent", "the caller", "quote"} {
		if strings.Contains(out+errs, modelText) {
			t.Errorf("job kill prints text written for the model (%q):\n%s%s", modelText, out, errs)
		}
	}
	if s, err := jobs.Load(dir, running.ID); err != nil || s.Status != jobs.StatusCancelled {
		t.Errorf("snapshot after kill: %v %s", err, s.Status)
	}
	// A job that already ended: nothing cancelled, exit 3 — also the one just killed.
	for _, id := range []string{done.ID, running.ID[:10]} {
		out, errs, code = te.run("job", "kill", id)
		if code != 3 || !strings.Contains(out, "already ended") || !strings.Contains(out, "nothing was cancelled") {
			t.Errorf("job kill %s (ended): exit %d\n%s%s", id, code, out, errs)
		}
	}
	if !strings.Contains(out, "cancelled") {
		t.Errorf("job kill of a cancelled job does not give its final status:\n%s", out)
	}
	if s, _ := jobs.Load(dir, done.ID); s.Status != jobs.StatusDone {
		t.Errorf("a done job changed: %s", s.Status)
	}
	// Unknown ids, full or prefix: exit 1 and how to list jobs.
	for _, id := range []string{strings.Repeat("0", 32), "deadbeef"} {
		out, errs, code = te.run("job", "kill", id)
		if code != 1 || !strings.Contains(errs, "no job") || !strings.Contains(errs, "`bridgectl jobs`") || strings.Contains(errs, "deepseek_agent") {
			t.Errorf("job kill %s (unknown): exit %d\n%s%s", id, code, out, errs)
		}
	}
	// Ambiguous: usage, with the matches.
	if _, errs, code := te.run("job", "kill", "cafebabe"); code != 2 || !strings.Contains(errs, twinA.ID) {
		t.Errorf("job kill AMBIGUOUS: exit %d %q", code, errs)
	}
	if out := te.must("job", "--help"); !strings.Contains(out, "exit status") || !strings.Contains(out, "3 ") {
		t.Errorf("job --help does not document the exit codes:\n%s", out)
	}
}

// Item 5: doctor says why the clock was not compared.
func TestDoctorSaysWhyTheClockWasNotCompared(t *testing.T) {
	noDate := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http adds one otherwise
		fmt.Fprint(w, `{"object":"list","data":[]}`)
	}))
	tests := []struct {
		name  string
		setup func(te *testEnv)
		want  string
	}{
		{"no key", func(te *testEnv) { te.dropEnvLine("DEEPSEEK_API_KEY=") }, "WARN clock: not compared: the API was not asked (no DEEPSEEK_API_KEY)"},
		{"refused", func(te *testEnv) { te.appendEnv("DEEPSEEK_BASE_URL=http://127.0.0.1:1") }, "WARN clock: not compared: the API at http://127.0.0.1:1 could not be reached"},
		{"no Date header", func(te *testEnv) { te.appendEnv("DEEPSEEK_BASE_URL=" + noDate) }, "WARN clock: not compared: the API gave no Date header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := newTestEnv(t)
			tt.setup(te)
			out, _, _ := te.run("doctor")
			if !strings.Contains(out, tt.want) {
				t.Errorf("doctor lacks %q:\n%s", tt.want, out)
			}
			if tt.name != "no Date header" && strings.Contains(out, "no Date header") {
				t.Errorf("doctor blames a Date header the API never sent:\n%s", out)
			}
		})
	}
}

// Item 6: start names the log the daemon writes: BRIDGE_LOG_FILE when set.
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

// Item 7: logs --tunnel with no tunnel log points at `bridgectl tunnel`.
func TestLogsTunnelPointsAtTunnel(t *testing.T) {
	te := newTestEnv(t)
	te.must("start")
	out := te.must("logs", "--tunnel")
	if !strings.Contains(out, "`bridgectl tunnel`") || strings.Contains(out, "`bridgectl start`") {
		t.Errorf("logs --tunnel without a tunnel:\n%s", out)
	}
}

// Item 8: a root that holds the bridge binary or the pinned Claude Code is
// allowed with a warning; one that holds the state dir or .env is warned
// about at start and in doctor.
func TestRootsHoldingProtectedPaths(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	bridgeBin := filepath.Join(proj, "bin", "bridge")
	claude := filepath.Join(proj, ".cache", "bin", "claude")
	for _, p := range []string{bridgeBin, claude} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 2.1.328\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(proj, "src"), 0o700)
	te := newTestEnv(t, "BRIDGE_BIN="+bridgeBin, "BRIDGE_CLAUDE_BIN="+claude)
	out, errs, code := te.run("allow", proj)
	if code != 0 || !strings.Contains(out, "allowed "+proj) {
		t.Fatalf("allow proj: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"warning", bridgeBin, "the bridge binary", claude, "Claude Code", "refuses " + proj, "subdirectories"} {
		if !strings.Contains(errs, want) {
			t.Errorf("allow of a root holding the binaries lacks %q:\n%s", want, errs)
		}
	}
	if _, errs, code := te.run("allow", filepath.Join(proj, "src")); code != 0 || strings.Contains(errs, "warning") {
		t.Errorf("allow proj/src: exit %d %q", code, errs)
	}

	// A hand-written root that holds the state dir and the .env: start and doctor say so.
	te2 := newTestEnv(t)
	te2.appendEnv("DEEPSEEK_ALLOWED_ROOTS=" + te2.dir)
	out, errs, code = te2.run("start")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"warning", te2.dir, "state dir", te2.envFile} {
		if !strings.Contains(errs, want) {
			t.Errorf("start with a root holding the state dir and .env lacks %q:\n%s", want, errs)
		}
	}
	out, _, _ = te2.run("doctor", "--dry")
	if !strings.Contains(out, "allowed root "+te2.dir+" contains the state directory") || !strings.Contains(out, "allowed root "+te2.dir+" contains the .env file "+te2.envFile) {
		t.Errorf("doctor with a root holding the state dir and .env:\n%s", out)
	}
}

// Item 9: every command's help is printed whole (the masker must not eat
// part of a placeholder URL), and bridgectl has a version like bridge's.
func TestHelpIsWholeAndVersion(t *testing.T) {
	te := newTestEnv(t)
	for _, c := range commands() {
		out, _, _ := te.run(c.Name, "--help")
		if strings.Count(out, "(") != strings.Count(out, ")") || strings.Contains(out, "…") {
			t.Errorf("%s --help is mangled (unbalanced parentheses or a masked placeholder):\n%s", c.Name, out)
		}
	}
	if out := te.must("help"); !strings.Contains(out, "version") {
		t.Errorf("help does not list version:\n%s", out)
	}
	old := Version
	Version = "v9.8.7-test"
	t.Cleanup(func() { Version = old })
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := te.run(args...)
		if code != 0 || out != "bridgectl v9.8.7-test\n" || errs != "" {
			t.Errorf("%v: exit %d %q %q", args, code, out, errs)
		}
	}
}

// Item 10: status points a disabled bridge at enable and a missing secret at
// secret; a named .env whose directory is missing is named as such.
func TestStatusNextSteps(t *testing.T) {
	te := newTestEnv(t)
	te.must("disable")
	out := te.must("status")
	if !strings.Contains(out, "daemon:    stopped — `bridgectl enable`, then `bridgectl start`") {
		t.Errorf("status of a disabled bridge:\n%s", out)
	}
	te.must("enable")
	if out := te.must("status"); !strings.Contains(out, "daemon:    stopped — `bridgectl start`") {
		t.Errorf("status of an enabled, stopped bridge:\n%s", out)
	}

	te.dropEnvLine("MCP_PATH_SECRET=")
	out = te.must("status")
	if !strings.Contains(out, "local:     none: no MCP_PATH_SECRET — run `bridgectl secret`") || strings.Contains(out, "/mcp/\n") {
		t.Errorf("status without a secret:\n%s", out)
	}

	for _, tt := range []struct{ path, want string }{
		{filepath.Join(te.dir, "nonexistent.env"), "`bridgectl --env " + filepath.Join(te.dir, "nonexistent.env") + " secret` creates it"},
		{filepath.Join(te.dir, "nodir", "x.env"), "its directory " + filepath.Join(te.dir, "nodir") + " does not exist"},
	} {
		_, errs, code := te.run("--env", tt.path, "status")
		if code != 1 || !strings.Contains(errs, tt.want) || strings.Contains(errs, "fix the value in") {
			t.Errorf("--env %s status: exit %d %q", tt.path, code, errs)
		}
	}
}

// doctor names a .env whose directory is missing without telling the user
// to fix a value in it.
func TestDoctorEnvFileInAMissingDir(t *testing.T) {
	te := newTestEnv(t)
	path := filepath.Join(te.dir, "nodir", "x.env")
	out, _, code := te.run("--env", path, "doctor", "--dry")
	if code != 1 || !strings.Contains(out, "FAIL config: env file "+path+": its directory") || strings.Contains(out, "fix it in") {
		t.Errorf("doctor --env in a missing dir: exit %d\n%s", code, out)
	}
}

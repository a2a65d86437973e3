package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// Tests for the defects a second review found (agent jobs, approvals).

// Payloads a caller or a model can put into a job's text: erase the line and
// return the cursor, OSC 52 (writes the clipboard), a C1 CSI, a backspace and
// a right-to-left override.
const (
	eraseLine = "benign\u001b[2K\rfake line"
	osc52     = "done\x1b]52;c;ZWNobyBwd25lZAo=\x07 ok"
	c1CSI     = "c1\u009b31m red"
	backspace = "rm -rf x\b\b\b\b\b\b\b\bls  "
	rtl       = "file\u202etxt.sh"
)

// raw returns the first terminal control in out other than a newline: a byte
// below 0x20, DEL, a C1 control, a line/paragraph separator or a bidi control.
func raw(out string) (rune, bool) {
	for _, r := range out {
		if r == '\n' {
			continue
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return r, true
		}
	}
	return 0, false
}

// noRawControls fails when out carries a terminal control, and checks that
// the text around it is still shown (escaped, not dropped).
func noRawControls(t *testing.T, what, out string, shown ...string) {
	t.Helper()
	if r, ok := raw(out); ok {
		t.Errorf("%s prints a raw control %U:\n%q", what, r, out)
	}
	for _, s := range shown {
		if !strings.Contains(out, s) {
			t.Errorf("%s does not show %q:\n%s", what, s, out)
		}
	}
}

// Item 1: every text of a job that bridgectl prints — from the MCP caller
// (task, workspace) or the model (result, notes, commands, files, tools,
// approval summary, error, trace) — is shown with its controls escaped.
func TestJobTextIsEscaped(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Hour).UTC()
	ended := t0.Add(time.Minute)
	exit0 := 0
	long := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0badc0de" + strings.Repeat("1", 24), Status: jobs.StatusWaitingApproval,
		Task: eraseLine, Workspace: "/srv/" + rtl, CreatedAt: t0, MaxSteps: 120, Steps: 4, LastTool: "Bash" + c1CSI,
		Approval:     &jobs.ApprovalInfo{ID: strings.Repeat("e", 32), Summary: "curl " + osc52},
		FilesWritten: []string{rtl, "a\nb"},
		Commands:     []jobs.Command{{Command: backspace, ExitCode: &exit0}},
		Partial:      &jobs.Partial{Label: "partial " + c1CSI, Notes: []string{osc52}},
		Trace: []jobs.TraceEntry{
			{Time: t0, Kind: "tool_use", Tool: "Bash" + c1CSI, Detail: eraseLine},
			{Time: t0, Kind: "text", Detail: osc52},
		}}
	done := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0badc0de" + strings.Repeat("2", 24), Status: jobs.StatusError,
		Task: osc52, Workspace: "/srv/ws", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120, Steps: 1,
		Result: "line one\n" + osc52 + "\nline three " + rtl, Error: "the model said " + eraseLine + c1CSI + "\x7f"}
	te.writeJobs(long, done)

	out, errs, code := te.run("jobs")
	if code != 0 {
		t.Fatalf("jobs: exit %d %s", code, errs)
	}
	noRawControls(t, "jobs", out, `benign\u{1b}[2K fake line`, `done\u{1b}]52;c;ZWNobyBwd25lZAo=\u{7} ok`)

	out = te.must("jobs", long.ID, "--trace")
	noRawControls(t, "jobs ID --trace", out,
		`task:       benign\u{1b}[2K fake line`,
		`workspace:  /srv/file\u{202e}txt.sh`,
		`last tool Bashc1\u{9b}31m red`,
		`curl done\u{1b}]52;c;ZWNobyBwd25lZAo=\u{7} ok`,
		`wrote:      file\u{202e}txt.sh`, `wrote:      a\nb`,
		`rm -rf x\u{8}`,
		`partial:    partial c1\u{9b}31m red`,
		`  note:     done\u{1b}]52`,
		`Bashc1\u{9b}31m red`)
	out = te.must("jobs", done.ID)
	noRawControls(t, "jobs ID (ended)", out,
		"result:     line one\n            done\\u{1b}]52;c;ZWNobyBwd25lZAo=\\u{7} ok\n            line three file\\u{202e}txt.sh",
		`error:      the model said benign\u{1b}[2K\rfake line`)

	// --json stays JSON: the exact bytes, escaped by encoding/json.
	js := te.must("jobs", done.ID, "--json")
	if r, ok := raw(js); ok {
		t.Errorf("jobs --json carries a raw control %U", r)
	}
	var got jobs.Snapshot
	if err := json.Unmarshal([]byte(js), &got); err != nil || got.Task != osc52 || got.Result != done.Result || got.Error != done.Error {
		t.Errorf("jobs --json does not round-trip the text: %v %q", err, got.Task)
	}

	// status's job lines.
	out = te.must("status")
	noRawControls(t, "status", out, `benign\u{1b}[2K fake line`)

	// job kill of an ended job says how it ended, with its error.
	out, errs, code = te.run("job", "kill", done.ID)
	if code != exitJobEnded {
		t.Errorf("job kill of an ended job: exit %d %q", code, errs)
	}
	noRawControls(t, "job kill (ended)", out+errs, `the model said benign\u{1b}[2K fake line`)

	// An ambiguous prefix lists the jobs with their tasks.
	_, errs, code = te.run("jobs", "0badc0de")
	if code != 2 {
		t.Errorf("jobs AMBIGUOUS: exit %d", code)
	}
	noRawControls(t, "jobs AMBIGUOUS", errs, `benign\u{1b}[2K fake line`)

	// logs: whatever the daemon's log holds is shown escaped too.
	logFile := filepath.Join(te.state, "bridge.log")
	if err := os.WriteFile(logFile, []byte(`{"level":"warn","summary":"x`+"\u009b2J\x7f"+`"}`+"\n"+"panic: "+osc52+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = te.must("logs")
	noRawControls(t, "logs", out, `"summary":"x\u{9b}2J\u{7f}"`, `panic: done\u{1b}]52`)
}

// Item 3: status points at `bridgectl pending` when a job waits for a human;
// approve and deny treat a malformed or too-short id as a usage error (exit
// 2), as `jobs` does.
func TestStatusPointsAtPendingAndShortApprovalIDs(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Minute).UTC()
	running := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: strings.Repeat("1", 32), Status: jobs.StatusRunning, Task: "build", CreatedAt: t0, MaxSteps: 120}
	te.writeJobs(running)
	out := te.must("status")
	if !strings.Contains(out, "jobs:      1 not finished (`bridgectl jobs` for more)") || strings.Contains(out, "bridgectl pending") {
		t.Errorf("status with a running job:\n%s", out)
	}
	waiting := func(id string) jobs.Snapshot {
		return jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: jobs.StatusWaitingApproval, Task: "deploy", CreatedAt: t0, MaxSteps: 120,
			Approval: &jobs.ApprovalInfo{ID: strings.Repeat("e", 32), Summary: "make deploy"}}
	}
	te.writeJobs(waiting(strings.Repeat("2", 32)))
	out = te.must("status")
	if !strings.Contains(out, "jobs:      2 not finished, 1 waiting for your approval: `bridgectl pending` shows what it asks (`bridgectl jobs` for more)") {
		t.Errorf("status with a job waiting for approval:\n%s", out)
	}
	te.writeJobs(waiting(strings.Repeat("3", 32)))
	if out = te.must("status"); !strings.Contains(out, "3 not finished, 2 waiting for your approval: `bridgectl pending` shows what they ask") {
		t.Errorf("status with two jobs waiting for approval:\n%s", out)
	}

	for _, cmd := range []string{"approve", "deny"} {
		for _, id := range []string{"abc", "0123456", "not-hex-at-all", strings.Repeat("g", 32), strings.Repeat("a", 33)} {
			t.Run(cmd+" "+id, func(t *testing.T) {
				_, errs, code := te.run(cmd, id)
				if code != 2 || !strings.Contains(errs, "a unique prefix of 8 or more") || strings.Contains(errs, "unknown approval id") {
					t.Errorf("%s %s: exit %d %q", cmd, id, code, errs)
				}
			})
		}
	}
	// A well-formed prefix that matches nothing stays "not waiting" (exit 1);
	// upper case is the same id.
	if _, errs, code := te.run("approve", "0123456789AB"); code != 1 || !strings.Contains(errs, "`bridgectl pending`") {
		t.Errorf("approve of an unknown prefix: exit %d %q", code, errs)
	}
}

// daemonPID is the pid the daemon's daemon.json records (0: none).
func (te *testEnv) daemonPID() int {
	te.t.Helper()
	var info struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(te.state, "daemon.json"))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return 0
	}
	return info.PID
}

// jobStatus is the status a job's snapshot reads now.
func (te *testEnv) jobStatus(id string) jobs.Status {
	te.t.Helper()
	var s jobs.Snapshot
	b, err := os.ReadFile(filepath.Join(te.state, "jobs", id+".json"))
	if err != nil || json.Unmarshal(b, &s) != nil {
		te.t.Fatalf("read job %s: %v", id, err)
	}
	return s.Status
}

// Item 2: `allow` does not reload a daemon with unfinished jobs (it would
// interrupt them) unless --reload; reload, restart and stop name the jobs
// they interrupted.
func TestAllowKeepsJobsAndStopsNameInterruptedJobs(t *testing.T) {
	te := newTestEnv(t)
	projA, projB := filepath.Join(te.dir, "projects", "a"), filepath.Join(te.dir, "projects", "b")
	for _, d := range []string{projA, projB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	te.must("start")
	pid := te.daemonPID()
	t0 := time.Now().Add(-time.Minute).UTC()
	ended := t0.Add(30 * time.Second)
	snap := func(id string, st jobs.Status, task string) jobs.Snapshot {
		s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: st, Task: task, Workspace: projA, CreatedAt: t0, MaxSteps: 120}
		if st.Final() {
			s.EndedAt = &ended
		}
		return s
	}
	running := snap("a1b2c3d4e5f6"+strings.Repeat("1", 20), jobs.StatusRunning, "reverse witness.txt "+eraseLine)
	waiting := snap("a1b2c3d4e5f6"+strings.Repeat("2", 20), jobs.StatusWaitingApproval, "deploy the site")
	queued := snap("a1b2c3d4e5f6"+strings.Repeat("3", 20), jobs.StatusQueued, "later")
	done := snap("a1b2c3d4e5f6"+strings.Repeat("4", 20), jobs.StatusDone, "finished long ago")
	te.writeJobs(running, waiting, queued, done)

	// allow with unfinished jobs: .env written, no reload, the jobs named.
	out, errs, code := te.run("allow", projA)
	if code != 0 {
		t.Fatalf("allow with running jobs: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"allowed " + projA, "NOT reloaded", "3 jobs are not finished",
		"a1b2c3d4e5f6  running", "a1b2c3d4e5f6  waiting_approval", "a1b2c3d4e5f6  queued", "reverse witness.txt benign\\u{1b}[2K fake line", "deploy the site",
		"`bridgectl reload` when they are done", "allow with --reload, interrupts them"} {
		if !strings.Contains(out, want) {
			t.Errorf("allow with unfinished jobs lacks %q:\n%s", want, out)
		}
	}
	noRawControls(t, "allow", out+errs)
	if strings.Contains(out, "reloaded: pid") || strings.Contains(out, "finished long ago") {
		t.Errorf("allow reloaded, or named a finished job:\n%s", out)
	}
	if te.daemonPID() != pid {
		t.Errorf("allow restarted the daemon: pid %d → %d", pid, te.daemonPID())
	}
	if st := te.jobStatus(running.ID); st != jobs.StatusRunning {
		t.Errorf("allow interrupted a job: %s", st)
	}
	if env, _ := os.ReadFile(te.envFile); !strings.Contains(string(env), "DEEPSEEK_ALLOWED_ROOTS="+projA) {
		t.Errorf(".env lacks the new root:\n%s", env)
	}

	// reload interrupts them and says which.
	out = te.must("reload")
	for _, want := range []string{"reloaded: pid", "interrupted 3 jobs", "a1b2c3d4e5f6  running", "a1b2c3d4e5f6  waiting_approval", "a1b2c3d4e5f6  queued", "deploy the site"} {
		if !strings.Contains(out, want) {
			t.Errorf("reload lacks %q:\n%s", want, out)
		}
	}
	noRawControls(t, "reload", out)
	if strings.Contains(out, "finished long ago") {
		t.Errorf("reload names a job that had ended before:\n%s", out)
	}
	for _, s := range []jobs.Snapshot{running, waiting, queued} {
		if st := te.jobStatus(s.ID); st != jobs.StatusInterrupted {
			t.Errorf("job %s after reload: %s", s.ID, st)
		}
	}

	// allow --reload reloads anyway and names what it interrupted.
	te.writeJobs(snap("b0b0b0b0b0b0"+strings.Repeat("5", 20), jobs.StatusRunning, "one more"))
	pid = te.daemonPID()
	out = te.must("allow", projB, "--reload")
	for _, want := range []string{"allowed " + projB, "reloaded: pid", "interrupted 1 job:", "b0b0b0b0b0b0  running", "one more"} {
		if !strings.Contains(out, want) {
			t.Errorf("allow --reload lacks %q:\n%s", want, out)
		}
	}
	if te.daemonPID() == pid {
		t.Errorf("allow --reload did not reload")
	}

	// No unfinished job: allow reloads as before, and nothing was interrupted.
	out = te.must("allow", "--remove", projB)
	if !strings.Contains(out, "reloaded: pid") || strings.Contains(out, "interrupted") || strings.Contains(out, "NOT reloaded") {
		t.Errorf("allow --remove without jobs:\n%s", out)
	}

	// restart and stop name the jobs they interrupt, too.
	te.writeJobs(snap("c0c0c0c0c0c0"+strings.Repeat("6", 20), jobs.StatusRunning, "restart victim"))
	out = te.must("restart")
	if !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, "c0c0c0c0c0c0  running           restart victim") || !strings.Contains(out, "started: pid") {
		t.Errorf("restart:\n%s", out)
	}
	te.writeJobs(snap("d0d0d0d0d0d0"+strings.Repeat("7", 20), jobs.StatusWaitingApproval, "stop victim"))
	out = te.must("stop")
	if !strings.Contains(out, "daemon stopped") || !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, "d0d0d0d0d0d0  waiting_approval  stop victim") {
		t.Errorf("stop:\n%s", out)
	}
	// Nothing running: nothing interrupted, and allow says when it applies.
	if out := te.must("stop"); strings.Contains(out, "interrupted") {
		t.Errorf("stop with nothing running:\n%s", out)
	}
	if out := te.must("allow", projB); !strings.Contains(out, "the daemon is not running") {
		t.Errorf("allow without a daemon:\n%s", out)
	}

	for _, cmd := range []string{"allow", "reload", "restart", "stop"} {
		if out := te.must(cmd, "--help"); !strings.Contains(out, "interrupted") {
			t.Errorf("%s --help does not say what happens to running jobs:\n%s", cmd, out)
		}
	}
	if out := te.must("allow", "--help"); !strings.Contains(out, "--reload") {
		t.Errorf("allow --help lacks --reload:\n%s", out)
	}
}

// A daemon that must be killed (it ignores SIGTERM) cannot mark its jobs:
// stop still names them, and says their snapshots are fixed at the next start.
func TestStopNamesJobsOfAKilledDaemon(t *testing.T) {
	old := stopGrace
	stopGrace = 500 * time.Millisecond
	t.Cleanup(func() { stopGrace = old })
	te := newTestEnv(t, "FAKEBRIDGE_IGNORE_TERM=1")
	te.must("start")
	job := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "e0e0e0e0e0e0" + strings.Repeat("8", 20), Status: jobs.StatusRunning, Task: "stuck",
		CreatedAt: time.Now().UTC(), MaxSteps: 120}
	te.writeJobs(job)
	out := te.must("stop")
	for _, want := range []string{"daemon stopped", "1 job was not finished", "killed", "e0e0e0e0e0e0  running           stuck", "interrupted"} {
		if !strings.Contains(out, want) {
			t.Errorf("stop of a killed daemon lacks %q:\n%s", want, out)
		}
	}
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

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

// Every text of a job that bridgectl prints — from the MCP caller
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
	out = te.must("logs", "--json")
	noRawControls(t, "logs --json", out, `"summary":"x\u{9b}2J\u{7f}"`, `panic: done\u{1b}]52`)
	out = te.must("logs") // the readable form
	noRawControls(t, "logs", out, `WRN summary=`, `panic: done\u{1b}]52`)
}

// `bridgectl jobs ID` shows what the end-of-job audit moved aside, where to
// look at it and the command that puts it back, and what it could not do.
func TestJobShowsQuarantined(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Hour).UTC()
	ended := t0.Add(time.Minute)
	id := "0badc0de" + strings.Repeat("3", 24)
	s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: jobs.StatusDone, Task: "t", Workspace: "/srv/ws",
		CreatedAt: t0, EndedAt: &ended, MaxSteps: 10, Nonce: strings.Repeat("4", 32), Result: "ok",
		Quarantined: []sandbox.Quarantined{
			{Path: ".git", What: "git dir", Change: "created", MovedTo: ".git.quarantined-" + id},
			{Path: ".husky/pre-commit", What: "hook file", Change: "changed", MovedTo: ".husky/pre-commit.quarantined-" + id, Mode: "0755"},
			{Path: "sub/.npmrc", What: "runs-later file", Change: "created", Error: "rename sub/.npmrc: permission denied"},
		},
		AuditNote: "the workspace is too large to audit whole"}
	te.writeJobs(s)
	out := te.must("jobs", id)
	for _, want := range []string{
		"QUARANTINED: created .git (git dir), which git, a hook manager or a shell would run outside the sandbox; moved to .git.quarantined-" + id + " — inspect it there; put it back on purpose, in /srv/ws, with: mv -T .git.quarantined-" + id + " .git\n",
		"QUARANTINED: changed .husky/pre-commit (hook file)",
		"mv -T .husky/pre-commit.quarantined-" + id + " .husky/pre-commit && chmod 0755 .husky/pre-commit",
		"QUARANTINED: created sub/.npmrc (runs-later file), which git, a hook manager or a shell would run outside the sandbox [rename sub/.npmrc: permission denied]",
		"audit:      the workspace is too large to audit whole",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs ID lacks %q:\n%s", want, out)
		}
	}
}

// bridgectl jobs ID shows the model, the policy the job ran under with its
// floor, and every tool call its ledger records as refused.
func TestJobShowsPolicyAndRefusals(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Hour).UTC()
	id := "0badc0de" + strings.Repeat("5", 24)
	e := policy.Merge(policy.Policy{DenyPaths: []string{"secrets/**"}}, policy.Policy{Tools: []string{"Read", "Write"}, WritePaths: []string{"out/**"}}, "/etc/floor.json")
	s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: jobs.StatusError, Task: "t", Workspace: "/srv/ws",
		CreatedAt: t0, MaxSteps: 10, Error: "stopped", Model: "deepseek-v4-pro", Thinking: "low", Policy: &e,
		Ledger: []jobs.LedgerEntry{
			{Tool: "Write", Summary: "Write out/a", Verdict: policy.AllowedByRule, Reason: "inside"},
			{Tool: "Write", Summary: "Write src/b", Verdict: policy.DeniedByPolicy, Reason: "the job's policy: src/b is outside write_paths (out/**)"},
			{Tool: "Bash", Summary: "Bash: rm -rf .", Verdict: policy.NotOffered, Reason: "the job's policy does not offer Bash"},
		}, LedgerTotal: 3}
	te.writeJobs(s)
	out := te.must("jobs", id)
	for _, want := range []string{
		"model:      deepseek-v4-pro, thinking low\n",
		"policy:     tools Read,Write; writes out/**; denies secrets/** (floor: /etc/floor.json)\n",
		"refused:    denied_by_policy Write src/b — the job's policy: src/b is outside write_paths (out/**)\n",
		"refused:    not_offered      Bash: rm -rf . — the job's policy does not offer Bash\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs ID lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Write out/a") {
		t.Errorf("an allowed call is listed as refused:\n%s", out)
	}
}

// `bridgectl jobs ID` shows why the job stopped, what it changed on disk and
// the failures it left; `--diff` prints the whole diff kept with the job.
// The files are the job's: a control in a path or in the diff is escaped,
// while the diff's tabs stay tabs.
func TestJobShowsChangesAndDiff(t *testing.T) {
	te := newTestEnv(t)
	t0 := time.Now().Add(-time.Hour).UTC()
	ended := t0.Add(time.Minute)
	one, ms := 1, int64(1500)
	s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0badc0de" + strings.Repeat("3", 24), Status: jobs.StatusDone,
		Task: "t", Workspace: "/srv/ws", CreatedAt: t0, EndedAt: &ended, MaxSteps: 120, Steps: 2,
		StopReason: jobs.StopCompleted, Nonce: strings.Repeat("a", 32), Result: "ok",
		Commands:           []jobs.Command{{Command: "go test ./...", ExitCode: &one, DurationMS: &ms, Runs: 2}},
		UnresolvedFailures: []string{"go test ./..."},
		Changes: []changes.Change{{Path: "a.txt", Change: changes.Modified, Size: 12, By: "command"},
			{Path: ".env", Change: changes.Created, Size: 9, Secret: true}, {Path: rtl, Change: changes.Deleted, Size: 1}},
		DiffBytes: 40}
	te.writeJobs(s)
	out := te.must("jobs", s.ID)
	noRawControls(t, "jobs ID", out,
		"stopped:    completed",
		"ran:        exit 1   go test ./...  (1.5s, run 2 times)",
		"UNRESOLVED: go test ./... failed and never succeeded afterwards",
		"changed:    modified a.txt (12 bytes, by command)",
		"changed:    created  .env (9 bytes, secret: contents never read)",
		`changed:    deleted  file\u{202e}txt.sh (1 bytes)`,
		"diff:       40 bytes: `bridgectl jobs "+s.ID+" --diff`")

	dir := filepath.Join(te.state, "changes", s.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	diff := "--- a/a.go\n+++ b/a.go\n-\tx := 1\n+\tx := \"" + osc52 + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, changes.DiffFile), []byte(diff), 0o600); err != nil {
		t.Fatal(err)
	}
	out = te.must("jobs", s.ID[:8], "--diff")
	if want := "--- a/a.go\n+++ b/a.go\n-\tx := 1\n+\tx := \"done\\u{1b}]52;c;ZWNobyBwd25lZAo=\\u{7} ok\"\n"; out != want {
		t.Errorf("jobs --diff =\n%q\nwant\n%q", out, want)
	}
	if _, errs, code := te.run("jobs", "--diff"); code != 2 || !strings.Contains(errs, "need a job ID") {
		t.Errorf("jobs --diff without an ID: exit %d %q", code, errs)
	}
}

// A command that waits for approval is shown as waiting, not as run.
func TestJobShowsAWaitingCommandAsNotRun(t *testing.T) {
	te := newTestEnv(t)
	zero, ms := 0, int64(63)
	s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: "0badc0de" + strings.Repeat("4", 24), Status: jobs.StatusWaitingApproval,
		Task: "t", Workspace: "/srv/ws", CreatedAt: time.Now().Add(-time.Minute).UTC(), MaxSteps: 120, Steps: 2,
		Approval: &jobs.ApprovalInfo{ID: "ap1", Summary: "Bash: rm old.txt"},
		Commands: []jobs.Command{{Command: "rm old.txt", ExitCode: &zero, DurationMS: &ms, Runs: 1}, {Command: "rm old.txt", Note: jobs.NoteWaiting, Runs: 1}}}
	te.writeJobs(s)
	out := te.must("jobs", s.ID)
	for _, want := range []string{"ran:        exit 0   rm old.txt  (63ms)\n", "waits:      rm old.txt (for approval: not run yet)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs ID lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "ran:") != 1 {
		t.Errorf("the waiting command is listed as run:\n%s", out)
	}
}

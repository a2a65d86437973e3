package e2e

// The handoff tells the whole truth (issue 14): what changed on disk, why a
// job stopped, what its commands left unresolved — with the real bridge, the
// real Claude Code in its jail and the double as the model.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// bashTurn is a model turn that runs one command.
func bashTurn(command string) dt.Turn { return dt.ToolCalls(bash(command)) }

func changeOf(p tools.AgentJobPayload, path string) (changes.Change, bool) {
	for _, c := range p.Changes {
		if c.Path == path {
			return c, true
		}
	}
	return changes.Change{}, false
}

// A job whose only changes are an approved `sed -i` on a.txt and a file a
// Bash command created: both are in changes (made by a command) and in the
// diff, and files_written — the file tools' own claims — is empty. The whole
// diff is kept with the job and `bridgectl jobs ID --diff` prints it.
func TestHandoffCommandChangesAreReported(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	a.approveEverything(t)
	ws := a.workspace(t, map[string]string{"a.txt": "hello\nworld\n"})
	a.d.ScriptAnthropic(
		bashTurn("sed -i 's/world/there/' a.txt"),
		bashTurn("echo made by a command > b.txt"),
		dt.Text("Edited a.txt and made b.txt."),
	)
	c := a.runToEnd(t, "Edit a.txt with sed and make b.txt.", ws)
	if c.IsError || c.P.Status != "done" || c.P.StopReason != string(jobs.StopCompleted) {
		t.Fatalf("job = %s (%s): %s", c.P.Status, c.P.StopReason, c.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello\nthere\n" {
		t.Fatalf("a.txt = %q: the sed never ran", b)
	}
	if len(c.P.FilesWritten) != 0 {
		t.Errorf("files_written = %v, want empty: no file tool ran", c.P.FilesWritten)
	}
	ac, okA := changeOf(c.P, "a.txt")
	bc, okB := changeOf(c.P, "b.txt")
	if !okA || ac.Change != changes.Modified || ac.By != "command" || ac.Size != 12 || ac.OldSize == nil || *ac.OldSize != 12 {
		t.Errorf("a.txt change = %+v (listed %v)", ac, okA)
	}
	if !okB || bc.Change != changes.Created || bc.By != "command" || bc.Size != int64(len("made by a command\n")) {
		t.Errorf("b.txt change = %+v (listed %v)", bc, okB)
	}
	for _, s := range []string{"--- a/a.txt\n+++ b/a.txt\n", "-world\n+there\n", "--- /dev/null\n+++ b/b.txt\n", "+made by a command\n"} {
		if !strings.Contains(c.P.Diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, c.P.Diff)
		}
	}
	// The diff is carried once, in structuredContent; the text points at it.
	if !strings.Contains(c.Text, "Diff: ") || !strings.Contains(c.Text, "structuredContent.diff") || strings.Contains(c.Text, "-world\n+there\n") {
		t.Errorf("the text does not point at the diff, or carries it again:\n%s", c.Text)
	}
	if !strings.Contains(c.Text, "modified a.txt (12 bytes, by command)") || !strings.Contains(c.Text, "created b.txt") {
		t.Errorf("text does not list the changes:\n%s", c.Text)
	}
	if !strings.Contains(c.P.NextStep, "quote the nonce "+c.P.Nonce) || !strings.Contains(c.P.Summary, "2 files changed on disk") {
		t.Errorf("next_step %q summary %q", c.P.NextStep, c.P.Summary)
	}
	// Command evidence: exit code, duration, output tail, runs.
	for _, cmd := range c.P.Commands {
		if cmd.ExitCode == nil || *cmd.ExitCode != 0 || cmd.DurationMS == nil || cmd.Runs != 1 {
			t.Errorf("command evidence %+v", cmd)
		}
	}
	whole, err := os.ReadFile(filepath.Join(a.dir().ChangesDir(c.P.JobID), changes.DiffFile))
	if err != nil || string(whole) != c.P.Diff {
		t.Fatalf("diff kept with the job = %q, %v; want the payload's", whole, err)
	}
	out, err := a.bridgectl(t, "jobs", c.P.JobID, "--diff")
	if err != nil || out != string(whole) {
		t.Errorf("bridgectl jobs --diff = %v:\n%s", err, out)
	}
	out, err = a.bridgectl(t, "jobs", c.P.JobID)
	if err != nil || !strings.Contains(out, "stopped:    completed") || !strings.Contains(out, "changed:    modified a.txt (12 bytes, by command)") {
		t.Errorf("bridgectl jobs ID = %v:\n%s", err, out)
	}
}

// A deleted file shows as deleted with its old lines in the diff. A .env
// the job wrote is held back, not in the workspace, with the reason; its
// diff shows what the job wrote (only a secret file's earlier contents are
// never shown), and the owner's --promote puts it in place.
func TestHandoffDeletedAndSecretFiles(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	a.approveEverything(t)
	secret := "secret-" + randomWitness(t)
	ws := a.workspace(t, map[string]string{"gone.txt": "old line\n", "seed.txt": "TOKEN=" + secret + "\n"})
	a.d.ScriptAnthropic(
		bashTurn("rm gone.txt"),
		bashTurn("cp seed.txt .env"),
		dt.Text("Removed gone.txt and wrote .env."),
	)
	c := a.runToEnd(t, "Remove gone.txt, write .env.", ws)
	if c.P.Status != "done" {
		t.Fatalf("job = %s: %s", c.P.Status, c.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("gone.txt still there (%v): the rm never ran", err)
	}
	gone, ok := changeOf(c.P, "gone.txt")
	if !ok || gone.Change != changes.Deleted || gone.Size != int64(len("old line\n")) || gone.Status != changes.StatusLanded {
		t.Errorf("gone.txt change = %+v (listed %v)", gone, ok)
	}
	if !strings.Contains(c.P.Diff, "--- a/gone.txt\n+++ /dev/null\n") || !strings.Contains(c.P.Diff, "-old line\n") {
		t.Errorf("diff does not show the deletion:\n%s", c.P.Diff)
	}
	checkHeld(t, c.P, ws, ".env")
	env, ok := changeOf(c.P, ".env")
	if !ok || env.Change != changes.Created || env.Held != changes.HeldDotPath || env.Size != int64(len("TOKEN="+secret+"\n")) {
		t.Errorf(".env change = %+v (listed %v)", env, ok)
	}
	if !strings.Contains(c.P.Diff, "+++ b/.env\n") || !strings.Contains(c.P.Diff, "+TOKEN="+secret) {
		t.Errorf("the diff does not show what the job wrote to .env:\n%s", c.P.Diff)
	}
	if !strings.Contains(c.Text, "created .env") || !strings.Contains(c.Text, "held") {
		t.Errorf("text does not list .env as held:\n%s", c.Text)
	}
	if !strings.Contains(c.P.NextStep, "--promote") {
		t.Errorf("next_step does not say how to promote: %q", c.P.NextStep)
	}
	a.promote(t, c.P.JobID, ".env")
	if b, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(b) != "TOKEN="+secret+"\n" {
		t.Fatalf(".env after --promote = %q, %v", b, err)
	}
	out, err := a.bridgectl(t, "jobs", c.P.JobID, "--changes")
	if err != nil || !strings.Contains(out, ".env") || !strings.Contains(out, "promoted") {
		t.Errorf("bridgectl jobs --changes after promote = %v:\n%s", err, out)
	}
}

// A job whose last `go test` failed is done, and says so: the command is in
// unresolved_failures, in its text and its next step; a command that failed
// and then succeeded is not.
func TestHandoffUnresolvedFailures(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	a.approveEverything(t)
	ws := a.workspace(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.21\n",
		// A test file that does not parse: go test fails before it compiles
		// anything (a cold build of the testing package alone can outlast
		// Claude Code's two-minute command limit on a loaded machine).
		"m_test.go":  "package m\n\nimport \"testing\"\n\nfunc TestFails(t *testing.T) { t.Fatal(\"still broken\")\n",
		"resolve.sh": "test -f flag\n",
	})
	a.d.ScriptAnthropic(
		bashTurn("sh resolve.sh"),
		bashTurn("touch flag"),
		bashTurn("sh resolve.sh"),
		bashTurn("go test ./..."),
		dt.Text("I ran the tests."),
	)
	c := a.runToEnd(t, "Run the tests.", ws)
	if c.P.Status != "done" || !hexNonce.MatchString(c.P.Nonce) {
		t.Fatalf("job = %s: %s", c.P.Status, c.Text)
	}
	if !slices.Equal(c.P.UnresolvedFailures, []string{"go test ./..."}) {
		t.Fatalf("unresolved_failures = %q, want [go test ./...]; commands %+v", c.P.UnresolvedFailures, c.P.Commands)
	}
	var gotest jobs.Command
	for _, cmd := range c.P.Commands {
		switch cmd.Command {
		case "go test ./...":
			gotest = cmd
		case "sh resolve.sh":
			if cmd.Runs != 2 {
				t.Errorf("sh resolve.sh runs = %d, want 2", cmd.Runs)
			}
		}
	}
	if gotest.ExitCode == nil || *gotest.ExitCode == 0 || !strings.Contains(gotest.OutputTail, "FAIL") || gotest.DurationMS == nil {
		t.Errorf("go test evidence = %+v", gotest)
	}
	if !strings.Contains(c.Text, "Unresolved failures (failed, never followed by a success of the same command): go test ./...") {
		t.Errorf("text does not name the unresolved failure:\n%s", c.Text)
	}
	if !strings.Contains(c.P.NextStep, "go test ./...") || !strings.Contains(c.P.NextStep, "never succeeded") || !strings.Contains(c.P.Summary, "not fixed (go test ./...)") {
		t.Errorf("next_step %q summary %q", c.P.NextStep, c.P.Summary)
	}
	snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
	if !slices.Equal(snap.UnresolvedFailures, []string{"go test ./..."}) {
		t.Errorf("snapshot unresolved_failures = %q", snap.UnresolvedFailures)
	}
}

// runToEnd starts a job with task in ws, with the Go SDK client, and
// polls it until it has ended.
func (a *agentBridge) runToEnd(t *testing.T, task, ws string) agentCall {
	t.Helper()
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": task, "workspace": ws}, nil)
	if c.IsError || jobs.Status(c.P.Status).Final() {
		return c
	}
	return waitSettled(t, cs, c.P.JobID, jobLimit)
}

// assertStopReason checks that an ended job's stop_reason, its text, its
// summary and its next step agree, and that the snapshot on disk says the
// same: the text names the reason, the next step says there is no result
// and what to do (hint).
func assertStopReason(t *testing.T, c agentCall, want jobs.StopReason, hint string) {
	t.Helper()
	if c.P.StopReason != string(want) {
		t.Fatalf("stop_reason %q, want %q: %s", c.P.StopReason, want, c.Text)
	}
	if string(jobs.StatusOf(want)) != c.P.Status {
		t.Errorf("status %s does not follow from stop_reason %s", c.P.Status, want)
	}
	if !strings.Contains(c.Text, "(stop_reason: "+string(want)+")") || !strings.Contains(c.P.Summary, "("+string(want)) {
		t.Errorf("text or summary does not name %s:\n%s\nsummary: %s", want, c.Text, c.P.Summary)
	}
	if !strings.Contains(c.P.NextStep, "no result and no nonce") || !strings.Contains(c.P.NextStep, hint) || !strings.Contains(c.Text, "Next step: "+c.P.NextStep) {
		t.Errorf("next_step %q (want it to mention %q, and the text to carry it)", c.P.NextStep, hint)
	}
}

// A `bridgectl job kill` is the owner's cancel, told apart from the
// caller's: the job reads cancelled_by_owner, in its poll and on disk.
func TestHandoffOwnerKill(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "1000"})
	cs := goSDKClient(t, a.URL())
	id, _ := a.startTailJob(t, cs)
	out, err := a.bridgectl(t, "job", "kill", id)
	if err != nil || !strings.Contains(out, "cancelled job "+id+" (cancelled_by_owner)") {
		t.Fatalf("bridgectl job kill = %v:\n%s", err, out)
	}
	c := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	assertNotDone(t, c, jobs.StatusCancelled)
	assertStopReason(t, c, jobs.StopCancelledByOwner, "bridgectl job kill")
	if s := assertSnapshotFile(t, a.dir(), id, jobs.StatusCancelled); s.StopReason != jobs.StopCancelledByOwner || !strings.Contains(s.Error, "owner") {
		t.Errorf("snapshot: stop_reason %q, error %q", s.StopReason, s.Error)
	}
	assertJobTreeGone(t, id)
}

// Claude Code as the MCP host hands its model the structuredContent of a
// tool result, not its text: the tool result its model reads — after it
// loaded the tool through ToolSearch — carries next_step, the summary and
// the nonce to quote.
func TestHandoffReachesClaudeCodeHostModel(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := a.workspace(t, map[string]string{"a.txt": "x\n"})
	a.d.ScriptAnthropic(dt.Text("The job's answer."))
	run := runClaudeHost(t, a.URL(), "Hand the task to DeepSeek.",
		toolSearch(ccHostServer, "deepseek_agent_start"),
		mcpCall(ccHostServer, "deepseek_agent_start", map[string]any{"task": "Answer.", "workspace": ws}),
		dt.Text("The bridge answered."),
	)
	snaps, _ := jobs.LoadAll(a.dir())
	if len(snaps) != 1 || snaps[0].Status != jobs.StatusDone || !hexNonce.MatchString(snaps[0].Nonce) {
		t.Fatalf("the host's call started no done job: %+v\nhost stdout:\n%s", snaps, run.Stdout)
	}
	nonce := snaps[0].Nonce
	var got string
	for _, r := range run.toolResults() {
		if strings.Contains(r, snaps[0].ID) {
			got = r
		}
	}
	if got == "" {
		t.Fatalf("the host's model never got the tool's result; tool results it got: %q\nhost stdout:\n%s", run.toolResults(), run.Stdout)
	}
	var p tools.AgentJobPayload
	if err := json.Unmarshal([]byte(got), &p); err != nil {
		t.Fatalf("the host's model got %q, not the structuredContent JSON: %v", got, err)
	}
	if p.Nonce != nonce || !strings.Contains(p.NextStep, "quote the nonce "+nonce) || p.Summary == "" || p.StopReason != "completed" {
		t.Errorf("what the host's model read: nonce %q next_step %q summary %q stop_reason %q", p.Nonce, p.NextStep, p.Summary, p.StopReason)
	}
}

// A job whose approval request nobody answered in time, and which then ends
// without an answer, reads approval_timeout: the host learns that a human
// was missing, not that the agent failed.
func TestHandoffApprovalTimeout(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "2000"})
	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(bash("mkdir -p out; touch out/x")),
		// No answer after the deny (Claude Code asks again after an empty
		// one; a spare turn is left over).
		dt.Text(""), dt.Text(""), dt.Text(""),
	)
	c := g.runToEnd(t, "Prepare out/.", ws)
	assertNotDone(t, c, jobs.StatusError)
	assertStopReason(t, c, jobs.StopApprovalTimeout, "bridgectl approve --watch")
	if len(c.P.Commands) != 1 || !c.P.Commands[0].Denied {
		t.Errorf("commands = %+v", c.P.Commands)
	}
}

package e2e

// End-to-end cases A–I of agent jobs (issue 3): a real `bridge serve`, the
// real Claude Code, the double's Anthropic side scripting the model's turns,
// and the official Go SDK client. Every workspace is a t.TempDir().

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

const jobLimit = 90 * time.Second // generous: Claude Code's start takes 1–4 s on a busy machine

// randomWitness is 32 random hex characters no model could guess.
func randomWitness(t *testing.T) string {
	w, err := ids.Hex(16)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var readLine1 = regexp.MustCompile(`(?m)^\s*1\t(.*)$`)

// A: read witness.txt, write it reversed to answer.txt; the bytes match and
// the payload carries the nonce. The double reverses what the harness really
// read (a Func turn), so the answer proves the Read happened.
func TestAgentA_ReadWriteNonce(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	witness := randomWitness(t)
	ws := a.workspace(t, map[string]string{"witness.txt": witness})
	answer := filepath.Join(ws, "answer.txt")
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "witness.txt")})),
		dt.Func(func(r dt.Request) dt.Turn {
			texts := r.ToolResultTexts()
			if len(texts) == 0 {
				return dt.Text("no tool result")
			}
			m := readLine1.FindStringSubmatch(texts[0])
			if m == nil {
				return dt.Text("could not read the witness: " + texts[0])
			}
			rs := []rune(strings.TrimSpace(m[1]))
			slices.Reverse(rs)
			return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": answer, "content": string(rs)}))
		}),
		dt.Text("I wrote the reversed witness to answer.txt."),
	)
	progress := newProgressLog()
	cs := goSDKClientWith(t, a.URL(), progress.Options())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start",
		map[string]any{"task": "Read witness.txt and write its content reversed to answer.txt.", "workspace": ws},
		mcp.Meta{"progressToken": "job-a"})
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("start = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	got, err := os.ReadFile(answer)
	if err != nil {
		t.Fatal(err)
	}
	rs := []rune(witness)
	slices.Reverse(rs)
	if string(got) != string(rs) {
		t.Fatalf("answer.txt = %q, want %q", got, string(rs))
	}
	if !hexNonce.MatchString(c.P.Nonce) || !strings.Contains(c.Text, c.P.Nonce) || !strings.Contains(c.Text, "quote the nonce") {
		t.Errorf("nonce %q not carried in the text:\n%s", c.P.Nonce, c.Text)
	}
	if c.P.Result != "I wrote the reversed witness to answer.txt." || c.P.Steps != 2 {
		t.Errorf("result %q steps %d", c.P.Result, c.P.Steps)
	}
	if !slices.Contains(c.P.FilesWritten, answer) {
		t.Errorf("files_written = %v", c.P.FilesWritten)
	}
	if c.P.Usage.InputTokens+c.P.Usage.CacheReadTokens == 0 || c.P.Usage.OutputTokens == 0 || c.P.CostUSD <= 0 {
		t.Errorf("usage %+v cost %v", c.P.Usage, c.P.CostUSD)
	}
	// The task reached the model through stdin, not argv; the model was called with the double's key.
	reqs := a.d.AnthropicRequests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].LastUserText(), "witness.txt") {
		t.Errorf("the model never saw the task")
	}
	if evs, ok := progress.WaitFor("job-a", 10*time.Second, func(evs []mcp.ProgressNotificationParams) bool {
		for _, e := range evs {
			if strings.Contains(e.Message, "tool call") {
				return true
			}
		}
		return false
	}); !ok {
		t.Errorf("no progress with the step count: %+v", evs)
	}
	snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
	if snap.Nonce != c.P.Nonce {
		t.Errorf("snapshot nonce %q", snap.Nonce)
	}
	if log := string(a.LogBytes()); !strings.Contains(log, "agent jobs can run") {
		t.Errorf("startup log does not say agent jobs can run")
	}
	assertJobTreeGone(t, c.P.JobID)
}

// B: a script fails; the agent edits it and runs it again: two Bash
// executions in the trace, with their exit statuses, and done.
func TestAgentB_FixAndRerun(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	a.approveEverything(t) // sh runs other code, so each run asks a human
	ws := a.workspace(t, map[string]string{"check.sh": "#!/bin/sh\necho broken\nexit 1\n"})
	script := filepath.Join(ws, "check.sh")
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "sh check.sh", "description": "run the check"})),
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": script})),
		dt.ToolCalls(dt.Call("Edit", map[string]any{"file_path": script, "old_string": "echo broken\nexit 1", "new_string": "echo fixed\nexit 0"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "sh check.sh", "description": "run it again"})),
		dt.Text("check.sh failed with exit 1; I fixed it and it now passes."),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Make check.sh pass.", "workspace": ws}, nil)
	if c.P.Status == "waiting_approval" {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	if c.P.Status != "done" {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	if len(c.P.Commands) != 2 {
		t.Fatalf("commands = %+v", c.P.Commands)
	}
	for i, want := range []int{1, 0} {
		cmd := c.P.Commands[i]
		if cmd.Command != "sh check.sh" || cmd.ExitCode == nil || *cmd.ExitCode != want {
			t.Errorf("command %d = %+v, want exit %d", i, cmd, want)
		}
	}
	// With its evidence: duration, how often it ran, the end of its output.
	if !strings.Contains(c.Text, "sh check.sh (exit 1, ") || !strings.Contains(c.Text, "run 2 times, output ends: broken)") || !strings.Contains(c.Text, "sh check.sh (exit 0, ") {
		t.Errorf("text lacks the exit statuses:\n%s", c.Text)
	}
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), "exit 0") {
		t.Errorf("check.sh = %q", b)
	}
	snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
	var bashRuns []*int
	for _, e := range snap.Trace {
		if e.Kind == "tool_result" && e.Tool == "Bash" {
			bashRuns = append(bashRuns, e.ExitCode)
		}
	}
	if len(bashRuns) != 2 || bashRuns[0] == nil || *bashRuns[0] != 1 || bashRuns[1] == nil || *bashRuns[1] != 0 {
		t.Errorf("trace Bash results = %v", bashRuns)
	}
}

// C: asked about a file that does not exist, the agent says so. The double
// answers from what the harness reported, so a made-up content would show.
func TestAgentC_MissingFileIsNotMadeUp(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := a.workspace(t, nil)
	missing := filepath.Join(ws, "notes.txt")
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": missing})),
		dt.Func(func(r dt.Request) dt.Turn {
			texts := r.ToolResultTexts()
			if len(texts) == 1 && strings.Contains(strings.ToLower(texts[0]), "does not exist") {
				return dt.Text("notes.txt does not exist in the workspace, so there is nothing to summarise.")
			}
			return dt.Text("UNEXPECTED tool result: " + strings.Join(texts, " | "))
		}),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Summarise notes.txt.", "workspace": ws}, nil)
	if c.P.Status != "done" {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	if !strings.Contains(c.P.Result, "does not exist") || strings.Contains(c.P.Result, "UNEXPECTED") {
		t.Errorf("result = %q", c.P.Result)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("the agent created the missing file")
	}
	if len(c.P.FilesWritten) != 0 {
		t.Errorf("files_written = %v", c.P.FilesWritten)
	}
}

// D: the step ceiling ends the job as error, with the partial attached and no nonce.
func TestAgentD_StepCeiling(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := a.workspace(t, nil)
	var turns []dt.Turn
	for i := range 6 {
		turns = append(turns, dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo step" + string(rune('0'+i)), "description": "step"})))
	}
	a.d.ScriptAnthropic(turns...)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Loop forever.", "workspace": ws, "max_steps": 2}, nil)
	assertNotDone(t, c, jobs.StatusError)
	if !strings.Contains(c.P.Error, "step ceiling of 2") || c.P.Partial.ToolCalls["Bash"] != 3 {
		t.Errorf("error %q partial %+v", c.P.Error, c.P.Partial)
	}
	assertStopReason(t, c, jobs.StopStepCeiling, "max_steps")
	assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusError)
	assertJobTreeGone(t, c.P.JobID)
}

// E: the wall-clock ceiling ends the job as error, and no process of its tree remains.
func TestAgentE_Timeout(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := a.workspace(t, map[string]string{"wait.log": ""})
	a.d.ScriptAnthropic(tailTurn())
	cs := goSDKClient(t, a.URL())
	begin := time.Now()
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Wait.", "workspace": ws, "timeout_seconds": 6}, nil)
	assertNotDone(t, c, jobs.StatusError)
	if !strings.Contains(c.P.Error, "wall-clock ceiling of 6s") {
		t.Errorf("error = %q", c.P.Error)
	}
	assertStopReason(t, c, jobs.StopTimeCeiling, "timeout_seconds")
	if d := time.Since(begin); d < 6*time.Second || d > 40*time.Second {
		t.Errorf("ended after %v", d)
	}
	assertJobTreeGone(t, c.P.JobID)
}

// F: a cancel ends the job as cancelled, and its process tree is gone.
func TestAgentF_Cancel(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "1000"})
	ws := a.workspace(t, map[string]string{"wait.log": ""})
	a.d.ScriptAnthropic(tailTurn())
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Wait.", "workspace": ws}, nil)
	if c.IsError || c.P.JobID == "" || c.P.Nonce != "" || !strings.Contains(c.Text, "Nothing to report yet") {
		t.Fatalf("start = %+v: %s", c.P, c.Text)
	}
	id := c.P.JobID
	pollUntil(t, cs, id, jobLimit, func(p tools.AgentJobPayload) bool { return p.Steps >= 1 })
	waitJobCommand(t, id, "tail", 30*time.Second)
	// Every process of the job's tree got the allow-listed environment: the
	// daemon's secrets and state dir are not in it. The harness holds the one
	// token; the sandbox strips it from the commands the job runs.
	snap, err := jobs.Load(a.dir(), id)
	if err != nil {
		t.Fatal(err)
	}
	checked, sawHarness, sawTail := 0, false, false
	for _, pid := range harness.JobProcesses(id) {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		checked++
		vars := strings.Split(string(env), "\x00")
		for _, kv := range vars {
			name, _, _ := strings.Cut(kv, "=")
			if name == "MCP_PATH_SECRET" || name == "DEEPSEEK_API_KEY" || name == "BRIDGE_STATE_DIR" || name == "BRIDGE_LOG_FILE" || strings.Contains(kv, testSecret) {
				t.Errorf("pid %d: %s reached the harness", pid, name)
			}
		}
		token := envValue(vars, "ANTHROPIC_AUTH_TOKEN")
		switch {
		case pid == snap.HarnessPID:
			sawHarness = true
			if !strings.HasPrefix(token, "bridge-job-") || !slices.Contains(vars, "ANTHROPIC_BASE_URL=http://"+modelProxyAddr(t, a.bridgeProc)) {
				t.Errorf("the harness (pid %d) lacks the model endpoint variables (the proxy and a job token)", pid)
			}
		case strings.HasPrefix(string(cmdline), "tail\x00"):
			sawTail = true
			if token != "" {
				t.Errorf("the sandboxed command (pid %d) can read the model token", pid)
			}
		case token != "" && !strings.HasPrefix(token, "bridge-job-"):
			t.Errorf("pid %d holds a token that is not the job's: %q", pid, cmdline)
		}
	}
	if checked < 2 || !sawHarness || !sawTail {
		t.Errorf("checked the environment of %d processes (harness %v, tail %v)", checked, sawHarness, sawTail)
	}
	c = callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil)
	assertNotDone(t, c, jobs.StatusCancelled)
	assertStopReason(t, c, jobs.StopCancelledByCaller, "deepseek_agent_cancel")
	assertJobTreeGone(t, id)
	assertSnapshotFile(t, a.dir(), id, jobs.StatusCancelled)
	// Cancelling again changes nothing.
	if again := callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": id}, nil); again.P.Status != "cancelled" {
		t.Errorf("second cancel = %s", again.P.Status)
	}
}

// G: the client hangs up during start; the job still reaches done and can be
// polled afterwards from a new session.
func TestAgentG_ClientDisconnect(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil)
	ws := a.workspace(t, nil)
	out := filepath.Join(ws, "late.txt")
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": out, "content": "written after the client left"})).WithDelay(3*time.Second),
		dt.Text("late.txt is written."),
	)
	cs := goSDKClient(t, a.URL())
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_agent_start", Arguments: map[string]any{"task": "Write late.txt.", "workspace": ws}})
	cancel()
	if err == nil {
		t.Fatal("start returned before the client hung up; the test proves nothing")
	}
	snaps, _ := jobs.LoadAll(a.dir())
	if len(snaps) != 1 {
		t.Fatalf("jobs on disk: %d", len(snaps))
	}
	id := snaps[0].ID
	cs2 := goSDKClient(t, a.URL())
	c := waitSettled(t, cs2, id, jobLimit)
	if c.P.Status != "done" || !hexNonce.MatchString(c.P.Nonce) {
		t.Fatalf("after hang-up: %s: %s", c.P.Status, c.Text)
	}
	if b, _ := os.ReadFile(out); string(b) != "written after the client left" {
		t.Errorf("late.txt = %q", b)
	}
}

// H: the daemon is killed with kill -9 mid-job and restarted: the job is
// interrupted with its partial trace, the snapshot is valid JSON, and the
// restarted daemon clears what was left of the job's tree.
func TestAgentH_Kill9AndRestart(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_SYNC_WINDOW_MS": "1000"})
	ws := a.workspace(t, map[string]string{"wait.log": ""})
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "half.txt"), "content": "half"})),
		tailTurn(),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Write half.txt, then wait.", "workspace": ws}, nil)
	id := c.P.JobID
	pollUntil(t, cs, id, jobLimit, func(p tools.AgentJobPayload) bool { return p.Steps >= 2 })
	waitJobCommand(t, id, "tail", 30*time.Second)
	// The live trace reaches the disk within the throttle interval.
	if !poll.Until(10*time.Second, func() bool {
		s, err := jobs.Load(a.dir(), id)
		return err == nil && s.Steps >= 2
	}) {
		t.Fatal("the live trace never reached the disk")
	}
	a.Kill9()
	raw, err := os.ReadFile(a.dir().JobFile(id))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := jobs.Load(a.dir(), id); err != nil || s.Status != jobs.StatusRunning {
		t.Fatalf("after kill -9 the file says %s (%v); raw %d bytes", s.Status, err, len(raw))
	}
	a.Restart()
	snap := assertSnapshotFile(t, a.dir(), id, jobs.StatusInterrupted)
	var tools []string
	for _, e := range snap.Trace {
		if e.Kind == "tool_use" {
			tools = append(tools, e.Tool)
		}
	}
	if !slices.Equal(tools, []string{"Write", "Bash"}) || !slices.Contains(snap.FilesWritten, filepath.Join(ws, "half.txt")) {
		t.Errorf("trace tools %v files %v", tools, snap.FilesWritten)
	}
	cs2 := goSDKClient(t, a.URL())
	c = callAgent(t, t.Context(), cs2, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 0}, nil)
	assertNotDone(t, c, jobs.StatusInterrupted)
	if c.P.Steps != 2 || c.P.Partial.ToolCalls["Bash"] != 1 {
		t.Errorf("after restart: steps %d partial %+v", c.P.Steps, c.P.Partial)
	}
	assertStopReason(t, c, jobs.StopInterruptedByRestart, "restarted")
	// The next start compared the workspace with the record of the job's
	// start: the file its Write made is listed, by the tool.
	if ch, ok := changeOf(c.P, "half.txt"); !ok || ch.Change != "created" || ch.By != "tool" || !strings.Contains(c.P.Diff, "+half") {
		t.Errorf("after restart: half.txt change %+v (listed %v), diff %q", ch, ok, c.P.Diff)
	}
	assertJobTreeGone(t, id)
}

// I: workspaces are refused, each with its reason: outside the roots, through
// a symlink that escapes the root, and any workspace when no roots are set.
func TestAgentI_WorkspaceRefusals(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	t.Run("roots set", func(t *testing.T) {
		a := startAgentBridge(t, false, nil)
		link := filepath.Join(a.root, "escape")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		cs := goSDKClient(t, a.URL())
		for _, tc := range []struct{ ws, want string }{
			{outside, "is outside every allowed root"},
			{link, "escapes the allowed roots through a symlink"},
		} {
			c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "x", "workspace": tc.ws}, nil)
			if !c.IsError || !strings.Contains(c.Text, tc.want) || !strings.Contains(c.Text, a.root) {
				t.Errorf("%s: IsError %v, text %q", tc.ws, c.IsError, c.Text)
			}
		}
		if snaps, _ := jobs.LoadAll(a.dir()); len(snaps) != 0 || len(a.d.AnthropicRequests()) != 0 {
			t.Errorf("refused workspaces created %d jobs, %d model calls", len(snaps), len(a.d.AnthropicRequests()))
		}
	})
	t.Run("no roots", func(t *testing.T) {
		a := startAgentBridge(t, true, nil)
		cs := goSDKClient(t, a.URL())
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "x", "workspace": outside}, nil)
		if !c.IsError || !strings.Contains(c.Text, "no allowed roots configured") || !strings.Contains(c.Text, "DEEPSEEK_ALLOWED_ROOTS") || !strings.Contains(c.Text, "bridgectl allow") {
			t.Errorf("IsError %v, text %q", c.IsError, c.Text)
		}
	})
}

// Shutdown: SIGTERM stops every harness and marks running and queued jobs
// interrupted (never done); the queue is FIFO with positions and bounded.
func TestAgentShutdownInterruptsAndQueue(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{
		"BRIDGE_SYNC_WINDOW_MS": "1000", "BRIDGE_MAX_CONCURRENT": "1", "BRIDGE_MAX_QUEUE": "1",
	})
	a.d.ScriptAnthropic(tailTurn())
	cs := goSDKClient(t, a.URL())
	start := func() agentCall { // a workspace each: one job per workspace
		ws := a.workspace(t, map[string]string{"wait.log": ""})
		return callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Wait.", "workspace": ws}, nil)
	}
	first := start()
	pollUntil(t, cs, first.P.JobID, jobLimit, func(p tools.AgentJobPayload) bool { return p.Steps >= 1 })
	waitJobCommand(t, first.P.JobID, "tail", 30*time.Second)
	second := start()
	if second.P.Status != "queued" || second.P.QueuePosition != 1 || !strings.Contains(second.Text, "queued (position 1)") {
		t.Fatalf("second = %s pos %d: %s", second.P.Status, second.P.QueuePosition, second.Text)
	}
	third := start()
	if !third.IsError || !strings.Contains(third.Text, "queue is full") || !strings.Contains(third.Text, "BRIDGE_MAX_QUEUE=1") {
		t.Fatalf("third = IsError %v: %s", third.IsError, third.Text)
	}
	if code := a.Stop(); code != 0 {
		t.Fatalf("bridge exited %d after SIGTERM", code)
	}
	for _, id := range []string{first.P.JobID, second.P.JobID} {
		s := assertSnapshotFile(t, a.dir(), id, jobs.StatusInterrupted)
		if !strings.Contains(s.Error, "shut down") {
			t.Errorf("%s: error %q", id, s.Error)
		}
		assertJobTreeGone(t, id)
	}
	a.Restart()
	cs = goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": first.P.JobID, "wait_seconds": 0}, nil)
	assertNotDone(t, c, jobs.StatusInterrupted)
	assertStopReason(t, c, jobs.StopInterruptedByRestart, "restarted")
	// The job the shutdown interrupted stays continuable, and says so; the
	// queued one never began a conversation, so it cannot be.
	if !c.P.CanContinue || !strings.Contains(c.P.NextStep, `deepseek_agent_continue with job_id "`+first.P.JobID+`"`) {
		t.Errorf("interrupted job: can_continue %v, next_step %q", c.P.CanContinue, c.P.NextStep)
	}
	q := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": second.P.JobID, "wait_seconds": 0}, nil)
	if q.P.CanContinue || strings.Contains(q.P.NextStep, "deepseek_agent_continue") {
		t.Errorf("queued job: can_continue %v, next_step %q", q.P.CanContinue, q.P.NextStep)
	}
	a.d.ScriptAnthropic(dt.Text("Resumed after the restart."))
	cont := callAgent(t, t.Context(), cs, "deepseek_agent_continue", map[string]any{"job_id": first.P.JobID, "task": "go on"}, nil)
	if cont.P.Status != string(jobs.StatusDone) {
		cont = waitSettled(t, cs, cont.P.JobID, jobLimit)
	}
	if cont.P.Status != string(jobs.StatusDone) || cont.P.Result != "Resumed after the restart." || cont.P.Parent != first.P.JobID {
		t.Errorf("continue after a clean restart = %s %q parent %q: %s", cont.P.Status, cont.P.Result, cont.P.Parent, cont.Text)
	}
}

// A missing harness binary: the daemon still serves, says at startup that
// agent jobs cannot run, and a job ends as error with the fix in its text.
func TestAgentMissingBinary(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-claude-here")
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_CLAUDE_BIN": missing})
	if log := string(a.LogBytes()); !strings.Contains(log, "agent jobs cannot run") {
		t.Errorf("startup log does not say agent jobs cannot run:\n%s", log)
	}
	ws := a.workspace(t, nil)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "x", "workspace": ws}, nil)
	assertNotDone(t, c, jobs.StatusError)
	for _, want := range []string{"BRIDGE_CLAUDE_BIN=" + missing, "scripts/install.sh claude"} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("text lacks %q: %s", want, c.Text)
		}
	}
}

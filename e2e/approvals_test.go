package e2e

// End-to-end proof of issue 4 with the real parts: `bridge serve`, the pinned
// Claude Code with its bubblewrap sandbox, the `bridge approval-prompt` child
// it spawns, the double's Anthropic side scripting the model, and the Go SDK
// client. The test plays the human through the approval queue in the state
// dir (or the real bridgectl). The daemon's HOME is a temp dir holding a
// credential canary, and its .env lies outside every root.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// guardedBridge is an agent bridge whose daemon has a temp HOME with an SSH
// key canary and a .env file with a canary, both outside the allowed root.
type guardedBridge struct {
	*agentBridge
	home      string
	sshKey    string // <home>/.ssh/id_e2e
	sshCanary string
	envFile   string
	envCanary string
}

// startGuardedBridge starts a guarded bridge; env goes on top.
func startGuardedBridge(t *testing.T, env map[string]string) *guardedBridge {
	t.Helper()
	g := &guardedBridge{home: t.TempDir(), sshCanary: "ssh-canary-" + randomWitness(t), envCanary: "env-canary-" + randomWitness(t)}
	g.sshKey = filepath.Join(g.home, ".ssh", "id_e2e")
	if err := os.MkdirAll(filepath.Dir(g.sshKey), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.sshKey, []byte(g.sshCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.envFile = filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(g.envFile, []byte("# "+g.envCanary+"\nBRIDGE_LOG_LEVEL=debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.agentBridge = startAgentBridge(t, false, mergeEnv(map[string]string{
		"HOME":            g.home,
		"BRIDGE_ENV_FILE": g.envFile,
	}, env))
	return g
}

// startCarelessBridge starts a guarded bridge with human approval off or on
// (mode), and with it on, a careless human who approves every request: the
// two settings in which a job's attempt must fail on the guards alone.
func startCarelessBridge(t *testing.T, mode string, env map[string]string) *guardedBridge {
	t.Helper()
	g := startGuardedBridge(t, mergeEnv(map[string]string{"BRIDGE_CC_APPROVAL": mode}, env))
	if mode == "on" {
		g.approveEverything(t)
	}
	return g
}

// queue is the approval queue in the bridge's state dir, as bridgectl sees it.
func (g *guardedBridge) queue() *approvals.Queue { return approvals.NewQueue(g.dir(), zerolog.Nop()) }

// pendingOf returns the requests of job that wait for a human.
func (g *guardedBridge) pendingOf(t *testing.T, jobID string) []approvals.PendingRequest {
	t.Helper()
	ps, err := g.queue().PendingForJob(jobID)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// waitPending waits for the next request of job that waits for a human, or
// for the job to end (then ok is false).
func (g *guardedBridge) waitPending(t *testing.T, jobID string, limit time.Duration) (approvals.PendingRequest, bool) {
	t.Helper()
	var req approvals.PendingRequest
	ended := false
	if !poll.Until(limit, func() bool {
		if ps := g.pendingOf(t, jobID); len(ps) > 0 {
			req = ps[0]
			return true
		}
		s, err := jobs.Load(g.dir(), jobID)
		ended = err == nil && s.Status.Final()
		return ended
	}) {
		t.Fatalf("job %s: no request for a human within %v", jobID, limit)
	}
	return req, !ended
}

// auditOf returns the audit log's lines (decoded) that mention needle.
func (g *guardedBridge) auditOf(t *testing.T, needle string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(g.dir().AuditLog())
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.Contains(line, needle) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// toolResults are the tool_result texts the model received, in order.
func toolResults(d *dt.Server) []string {
	var out []string
	for _, r := range d.ScriptedAnthropicRequests() {
		out = append(out, r.ToolResultTexts()...)
	}
	return out
}

// runJob starts a job on the bridge at url with a fresh Go SDK client and
// waits until it has settled (done, error, cancelled or interrupted).
func runJob(t *testing.T, url, task, ws string) agentCall {
	t.Helper()
	cs := goSDKClient(t, url)
	c := startJob(t, cs, task, ws)
	if c.P.Status != "done" {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	return c
}

// startJob starts a job with the Go SDK client and returns its first answer.
func startJob(t *testing.T, cs *mcp.ClientSession, task, ws string) agentCall {
	t.Helper()
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": task, "workspace": ws}, nil)
	if c.IsError || c.P.JobID == "" {
		t.Fatalf("start: IsError %v: %s", c.IsError, c.Text)
	}
	return c
}

// startWaitingJob starts a job whose first call waits for a human and
// returns once it does.
func startWaitingJob(t *testing.T, g *guardedBridge, task, ws string) (*mcp.ClientSession, agentCall) {
	t.Helper()
	cs := goSDKClient(t, g.URL())
	c := startJob(t, cs, task, ws)
	if c.P.Status != string(jobs.StatusWaitingApproval) {
		c = waitWaiting(t, cs, c.P.JobID)
	}
	return cs, c
}

// waitWaiting polls until the job waits for a human and returns that answer.
func waitWaiting(t *testing.T, cs *mcp.ClientSession, id string) agentCall {
	t.Helper()
	c := pollUntil(t, cs, id, jobLimit, func(p tools.AgentJobPayload) bool { return p.Status == string(jobs.StatusWaitingApproval) })
	if c.P.Status != string(jobs.StatusWaitingApproval) || c.P.Approval == nil || c.P.Approval.ID == "" {
		t.Fatalf("job %s is %s, not waiting for a human: %s", id, c.P.Status, c.Text)
	}
	return c
}

// hasEvent reports whether the audit lines hold one with event (and, if set, decision).
func hasEvent(lines []map[string]any, event, decision string) bool {
	for _, l := range lines {
		if l["event"] == event && (decision == "" || l["decision"] == decision) {
			return true
		}
	}
	return false
}

// A chained command pauses the job at waiting_approval with the request's id
// and summary; `bridgectl approve ID` lets it run, inside the sandbox, to done.
func TestApprovalChainedCommandWaitsThenRuns(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo alpha && echo beta", "description": "two echoes"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("output: " + strings.Join(r.ToolResultTexts(), " | ")) }),
	)
	cs, c := startWaitingJob(t, g, "Print alpha and beta.", ws)
	id, req := c.P.JobID, c.P.Approval
	if !strings.Contains(req.Summary, "echo alpha && echo beta") || !strings.Contains(c.Text, "bridgectl pending") || !strings.Contains(c.Text, req.ID) {
		t.Errorf("approval %+v, text %s", req, c.Text)
	}
	if st, err := os.Stat(filepath.Join(g.dir().Approvals(), req.ID+".request.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("request file: %v %v", st, err)
	}
	if n := len(g.d.ScriptedAnthropicRequests()); n != 1 {
		t.Errorf("the model was asked %d times while the command waited", n)
	}
	// Listed as waiting, not as run (it had said runs 1 while it waited).
	if cmds := c.P.Commands; len(cmds) != 1 || cmds[0].Note != jobs.NoteWaiting || cmds[0].Runs != 0 || cmds[0].ExitCode != nil || cmds[0].DurationMS != nil {
		t.Errorf("while it waits, commands = %+v", cmds)
	}
	out, err := g.bridgectl(t, "approve", req.ID, "--reason", "e2e: looks fine")
	if err != nil {
		t.Fatalf("bridgectl approve: %v\n%s", err, out)
	}
	c = waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" || !hexNonce.MatchString(c.P.Nonce) {
		t.Fatalf("after approval: %s: %s", c.P.Status, c.Text)
	}
	if c.P.Result != "output: alpha\nbeta" {
		t.Errorf("result %q", c.P.Result)
	}
	if cmds := c.P.Commands; len(cmds) != 1 || cmds[0].Status() != "exit 0" || cmds[0].Runs != 1 || cmds[0].DurationMS == nil {
		t.Errorf("after approval, commands = %+v", cmds)
	}
	lines := g.auditOf(t, req.ID)
	if !hasEvent(lines, "pending", "") || !hasEvent(lines, "human", "allow") {
		t.Errorf("audit of %s: %v", req.ID, lines)
	}
	if ps := g.pendingOf(t, id); len(ps) != 0 {
		t.Errorf("still pending: %+v", ps)
	}
	// The daemon's log, as the owner reads it: the job's start, each tool
	// call, the request with its id and command, who decided where, and the
	// job's end with its stop_reason.
	logs, err := g.bridgectl(t, "logs", "-n", "400")
	if err != nil {
		t.Fatalf("bridgectl logs: %v\n%s", err, logs)
	}
	for _, want := range []string{"job started: its harness is running (pid ", "tool deepseek_agent_start answered in ",
		"waiting for a human: bridgectl approve " + req.ID, "approval " + req.ID + " approved by ", "echo alpha && echo beta",
		"job ended: done (completed) after 1 step in "} {
		if !strings.Contains(logs, want) {
			t.Errorf("bridgectl logs lacks %q:\n%s", want, logs)
		}
	}
}

// A human's deny, with its reason, reaches the model in the tool result with
// the instruction not to work around it; the command never runs and the job
// ends honestly, saying it was denied.
func TestApprovalDenyReachesTheModel(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, map[string]string{"keep.txt": "keep me"})
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "rm -f keep.txt", "description": "clean up"})),
		dt.Func(func(r dt.Request) dt.Turn {
			return dt.Text("I could not clean up: " + strings.Join(r.ToolResultTexts(), " | "))
		}),
	)
	cs := goSDKClient(t, g.URL())
	id := startJob(t, cs, "Delete keep.txt.", ws).P.JobID
	req := waitWaiting(t, cs, id).P.Approval
	const reason = "keep.txt stays, it is the owner's"
	if err := g.queue().Decide(req.ID, false, reason, "e2e"); err != nil {
		t.Fatal(err)
	}
	c := waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" {
		t.Fatalf("status %s: %s", c.P.Status, c.Text)
	}
	results := toolResults(g.d)
	if len(results) != 1 || !strings.Contains(results[0], reason) || !strings.Contains(results[0], "Do not try to work around this denial") {
		t.Fatalf("tool results the model saw: %q", results)
	}
	if !strings.Contains(c.P.Result, reason) {
		t.Errorf("the answer hides the denial: %q", c.P.Result)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "keep.txt")); err != nil || string(b) != "keep me" {
		t.Errorf("keep.txt: %q %v", b, err)
	}
	if len(c.P.Commands) != 1 || !c.P.Commands[0].Denied {
		t.Errorf("commands %+v", c.P.Commands)
	}
	snap := assertSnapshotFile(t, g.dir(), id, jobs.StatusDone)
	if len(snap.PermissionDenials) != 1 || snap.PermissionDenials[0].ToolName != "Bash" {
		t.Errorf("permission denials %+v", snap.PermissionDenials)
	}
	if lines := g.auditOf(t, req.ID); !hasEvent(lines, "human", "deny") {
		t.Errorf("audit: %v", lines)
	}
}

// No answer within BRIDGE_APPROVAL_TIMEOUT_MS is a deny; the audit log says
// it timed out, and the request can no longer be approved.
func TestApprovalTimeoutDenies(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "3000"})
	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "mkdir -p out; touch out/x", "description": "prepare"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("not done: " + strings.Join(r.ToolResultTexts(), " | ")) }),
	)
	cs := goSDKClient(t, g.URL())
	c := startJob(t, cs, "Prepare out/.", ws)
	id := c.P.JobID
	if c.P.Status != string(jobs.StatusWaitingApproval) {
		c = waitWaiting(t, cs, id)
	}
	req := c.P.Approval
	c = waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" || !strings.Contains(c.P.Result, "no answer from the owner within 3s") || !strings.Contains(c.P.Result, "Do not try to work around this denial") {
		t.Fatalf("%s: %q", c.P.Status, c.P.Result)
	}
	if _, err := os.Stat(filepath.Join(ws, "out")); err == nil {
		t.Error("the command ran without an answer")
	}
	if lines := g.auditOf(t, req.ID); !hasEvent(lines, "timeout", "deny") {
		t.Errorf("audit: %v", lines)
	}
	if err := g.queue().Decide(req.ID, true, "too late", "e2e"); err == nil {
		t.Error("a timed-out request was approved")
	}
}

// A Read outside the workspace and a WebFetch each wait for a human.
func TestApprovalReadOutsideAndWebFetchAskAHuman(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, nil)
	outside := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(outside, []byte("outside-witness-"+randomWitness(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": outside})),
		dt.ToolCalls(dt.Call("WebFetch", map[string]any{"url": "http://127.0.0.1:9/notes", "prompt": "summarise"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("both denied") }),
	)
	cs := goSDKClient(t, g.URL())
	id := startJob(t, cs, "Read notes.txt and the notes page.", ws).P.JobID
	for _, want := range []string{"Read " + outside, "http://127.0.0.1:9/notes"} {
		c := waitWaiting(t, cs, id)
		if !strings.Contains(c.P.Approval.Summary, want) {
			t.Errorf("waiting on %q, want a request for %q", c.P.Approval.Summary, want)
		}
		if err := g.queue().Decide(c.P.Approval.ID, false, "not for this job", "e2e"); err != nil {
			t.Fatal(err)
		}
		// Wait for the decision to be consumed before looking for the next request.
		pollUntil(t, cs, id, jobLimit, func(p tools.AgentJobPayload) bool {
			return p.Approval == nil || p.Approval.ID != c.P.Approval.ID
		})
	}
	c := waitSettled(t, cs, id, jobLimit)
	if c.P.Status != "done" {
		t.Fatalf("%s: %s", c.P.Status, c.Text)
	}
	for _, r := range toolResults(g.d) {
		if strings.Contains(r, "outside-witness-") {
			t.Errorf("the denied file reached the model: %q", r)
		}
	}
	for _, tool := range []string{"Read", "WebFetch"} {
		if lines := g.auditOf(t, `"tool":"`+tool+`"`); !hasEvent(lines, "pending", "") || !hasEvent(lines, "human", "deny") {
			t.Errorf("audit of %s: %v", tool, lines)
		}
	}
}

// attempt is one scripted try of a job to raise its own authority: the tool
// call, and a string its audit line must carry.
type attempt struct {
	name  string
	call  dt.ToolCall
	audit string
}

// scriptAttempts scripts one tool call per attempt, then a final answer.
func scriptAttempts(d *dt.Server, as []attempt) {
	var turns []dt.Turn
	for _, a := range as {
		turns = append(turns, dt.ToolCalls(a.call))
	}
	d.ScriptAnthropic(append(turns, dt.Text("I tried everything."))...)
}

// bash is a Bash tool call.
func bash(cmd string) dt.ToolCall {
	return dt.Call("Bash", map[string]any{"command": cmd, "description": "attempt"})
}

// forgedDecision is a well-formed decision file approving request id, as
// bridgectl would write it.
func forgedDecision(id string) string {
	return fmt.Sprintf(`{"version":1,"id":%q,"approved":true,"reason":"self-approved","by":"the job","kind":"human","decided":%q}`, id, time.Now().UTC().Format(time.RFC3339Nano))
}

// checkAudited fails for every attempt with no audit line of the job
// carrying its marker.
func (g *guardedBridge) checkAudited(t *testing.T, jobID string, as []attempt) {
	t.Helper()
	lines := g.auditOf(t, jobID)
	for _, a := range as {
		found := false
		for _, l := range lines {
			if s, _ := l["summary"].(string); l["event"] == "request" && strings.Contains(s, a.audit) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no audit line of job %s mentions %q", a.name, jobID, a.audit)
		}
	}
}

// checkNothingLeaked fails if a tool result the model received carries one of
// the secrets.
func checkNothingLeaked(t *testing.T, d *dt.Server, secrets map[string]string) {
	t.Helper()
	for i, r := range toolResults(d) {
		t.Logf("tool result %d: %.200q", i, r)
		for name, s := range secrets {
			if strings.Contains(r, s) {
				t.Errorf("tool result %d carries %s: %q", i, name, r)
			}
		}
	}
}

// The job cannot raise its own authority (issue 4 §6). Job 1 waits for a
// human on a command of its own; job 2, in the same daemon, then tries every
// way to approve it or to widen what it may do. The test plays a careless
// human who approves every command job 2 asks for, so each attempt must fail
// at the rules or at the OS sandbox beneath them. Afterwards job 1 still
// waits, its request is still pending and undecided on disk, no flag exists,
// no secret reached the model, and the audit log shows every attempt.
func TestSelfApprovalIsImpossible(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	state, appr := g.StateDir(), g.dir().Approvals()
	marker := "build-" + randomWitness(t)
	g.d.ScriptAnthropic(dt.ToolCalls(bash("rm -rf " + marker)))
	cs := goSDKClient(t, g.URL())
	job1 := startJob(t, cs, "Clean the build.", g.workspace(t, nil)).P.JobID
	p1 := waitWaiting(t, cs, job1).P.Approval.ID
	decisionFile := filepath.Join(appr, p1+".decision.json")

	ws2 := g.workspace(t, nil)
	link := filepath.Join(ws2, "statelink")
	attempts := []attempt{
		{"Bash writes a decision for job 1's request", bash(fmt.Sprintf("printf '%%s' '%s' > %s", forgedDecision(p1), decisionFile)), p1 + ".decision.json"},
		{"Bash creates the approval-off flag", bash("touch " + g.dir().ApprovalOffFlag()), "touch " + g.dir().ApprovalOffFlag()},
		{"Bash writes the approval-off flag", bash("echo off > " + g.dir().ApprovalOffFlag()), "echo off > " + g.dir().ApprovalOffFlag()},
		{"cat the daemon's .env", bash("cat " + g.envFile), "cat " + g.envFile},
		{"Write tool into the state dir", dt.Call("Write", map[string]any{"file_path": decisionFile, "content": forgedDecision(p1)}), "Write " + decisionFile},
		{"plant a symlink to the state dir", bash("ln -s " + state + " statelink"), "ln -s " + state},
		{"Read through the symlink", dt.Call("Read", map[string]any{"file_path": filepath.Join(link, "approvals", p1+".request.json")}), "statelink/approvals"},
		{"cat through the symlink", bash("cat < statelink/approvals/" + p1 + ".request.json"), "cat < statelink"},
		{"cat the SSH key", bash("cat " + g.sshKey), "cat " + g.sshKey},
		{"cat the SSH key by redirection", bash("cat < " + g.sshKey), "cat < " + g.sshKey},
		{"Read the SSH key", dt.Call("Read", map[string]any{"file_path": g.sshKey}), "Read " + g.sshKey},
	}
	scriptAttempts(g.d, attempts)
	c := startJob(t, cs, "Get job 1 approved.", ws2)
	job2 := c.P.JobID

	// The careless human: every command job 2 asks for is approved.
	approved := 0
	if !poll.Until(2*jobLimit, func() bool {
		if s, err := jobs.Load(g.dir(), job2); err == nil && s.Status.Final() {
			return true
		}
		for _, p := range g.pendingOf(t, job2) {
			if err := g.queue().Decide(p.ID, p.Tool == "Bash", "e2e: the careless human", "e2e"); err != nil {
				t.Fatalf("decide %s: %v", p.ID, err)
			}
			if p.Tool == "Bash" {
				approved++
			}
		}
		return false
	}) {
		t.Fatalf("job 2 did not end within %v", 2*jobLimit)
	}
	c = waitSettled(t, cs, job2, jobLimit)
	if c.P.Status != "done" || c.P.Steps != len(attempts) {
		t.Fatalf("job 2: %s after %d steps: %s", c.P.Status, c.P.Steps, c.Text)
	}
	t.Logf("the human approved %d commands of job 2", approved)
	if approved < 4 {
		t.Errorf("only %d commands reached the human: the OS layer was barely exercised", approved)
	}

	// Job 1 still waits on the same request, undecided on disk.
	c1 := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": job1, "wait_seconds": 0}, nil)
	if c1.P.Status != string(jobs.StatusWaitingApproval) || c1.P.Approval == nil || c1.P.Approval.ID != p1 {
		t.Fatalf("job 1 is %s (%+v), want waiting on %s", c1.P.Status, c1.P.Approval, p1)
	}
	if ps := g.pendingOf(t, job1); len(ps) != 1 || ps[0].ID != p1 {
		t.Errorf("job 1's pending requests: %+v", ps)
	}
	for _, f := range []string{decisionFile, g.dir().ApprovalOffFlag()} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v)", f, err)
		}
	}
	for _, l := range g.auditOf(t, p1) {
		if l["id"] == p1 && l["event"] != "pending" {
			t.Errorf("job 1's request was decided: %v", l)
		}
	}
	checkNothingLeaked(t, g.d, map[string]string{"the .env canary": g.envCanary, "the SSH canary": g.sshCanary, "job 1's request": marker})
	g.checkAudited(t, job2, attempts)
	if got, err := os.Readlink(link); err != nil || got != state {
		t.Logf("the planted symlink: %q %v", got, err)
	}

	// Cancelling job 1 ends its request in deny.
	c1 = callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": job1}, nil)
	assertNotDone(t, c1, jobs.StatusCancelled)
	if !poll.Until(10*time.Second, func() bool { return hasEvent(g.auditOf(t, p1), "cancel", "deny") }) {
		t.Fatalf("job 1's request was not denied after the cancel: %v", g.auditOf(t, p1))
	}
	if ps := g.pendingOf(t, job1); len(ps) != 0 {
		t.Errorf("still pending after the cancel: %+v", ps)
	}
}

// With human approval off only the OS sandbox stands between a command and
// the state dir, the daemon's .env and the credential stores: every read of
// them fails, every write lands nowhere, and a write outside the workspace
// fails — while a write inside it works. This also keeps a canary read
// through Claude Code's denyRead (public reports say it was ineffective in
// some earlier versions).
func TestSandboxAloneHoldsWithApprovalOff(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, map[string]string{"BRIDGE_CC_APPROVAL": "off"})
	state := g.StateDir()
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	forgedID := strings.Repeat("ab", 16)
	forged := filepath.Join(g.dir().Approvals(), forgedID+".decision.json")
	host, port, _ := strings.Cut(g.Addr(), ":")
	netCmd := fmt.Sprintf("echo x > /dev/tcp/%s/%s", host, port)
	ws := g.workspace(t, nil)
	attempts := []attempt{
		{"write inside the workspace (control)", bash("echo alive > inside.txt"), "echo alive > inside.txt"},
		{"read daemon.json by redirection", bash("cat < " + g.dir().DaemonInfoFile()), "cat < " + g.dir().DaemonInfoFile()},
		{"read daemon.json by a program path", bash("/bin/cat " + g.dir().DaemonInfoFile()), "/bin/cat " + g.dir().DaemonInfoFile()},
		{"list the state dir", bash("/bin/ls -la " + state), "/bin/ls -la " + state},
		{"write a decision file", bash(fmt.Sprintf("printf '%%s' '%s' > %s", forgedDecision(forgedID), forged)), forgedID + ".decision.json"},
		{"write the approval-off flag", bash("echo off > " + g.dir().ApprovalOffFlag()), "echo off > " + g.dir().ApprovalOffFlag()},
		{"read the daemon's .env by redirection", bash("cat < " + g.envFile), "cat < " + g.envFile},
		{"read the SSH canary by redirection", bash("cat < " + g.sshKey), "cat < " + g.sshKey},
		{"plant a symlink to the state dir", bash("ln -s " + state + " statelink"), "ln -s " + state},
		{"read through the symlink", bash("cat < statelink/daemon.json"), "cat < statelink/daemon.json"},
		{"write outside the workspace", bash("touch " + outside), "touch " + outside},
		{"reach the bridge on loopback", bash(netCmd), netCmd},
	}
	scriptAttempts(g.d, attempts)
	c := runJob(t, g.URL(), "Try everything.", ws)
	if c.P.Status != "done" || c.P.Steps != len(attempts) {
		t.Fatalf("%s after %d steps: %s", c.P.Status, c.P.Steps, c.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "inside.txt")); err != nil || string(b) != "alive\n" {
		t.Fatalf("the control write inside the workspace: %q %v — the commands did not run", b, err)
	}
	for _, cmd := range c.P.Commands {
		if cmd.Command == netCmd && (cmd.ExitCode == nil || *cmd.ExitCode == 0) {
			t.Errorf("a sandboxed command reached the bridge on loopback: %+v", cmd)
		}
	}
	for _, f := range []string{forged, g.dir().ApprovalOffFlag(), outside} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v)", f, err)
		}
	}
	checkNothingLeaked(t, g.d, map[string]string{
		"the .env canary": g.envCanary, "the SSH canary": g.sshCanary,
		"daemon.json": `"started_at"`, "the job snapshots": "jobs", "the harness dir": "harness",
	})
	g.checkAudited(t, c.P.JobID, attempts)
	if lines := g.auditOf(t, c.P.JobID); !hasEvent(lines, "approval_off", "allow") {
		t.Errorf("the audit log does not say approval was off: %v", lines)
	}
	if log := string(g.LogBytes()); !strings.Contains(log, "HUMAN APPROVAL IS OFF") {
		t.Error("the daemon's log does not say approval is off")
	}
	var info map[string]any
	if b, err := os.ReadFile(g.dir().DaemonInfoFile()); err != nil || json.Unmarshal(b, &info) != nil || info["approval"] != "off" || info["sandbox"] != "on" {
		t.Errorf("daemon.json: %v %v", info, err)
	}
}

// `bridgectl approval off` writes the flag: from the next tool call nothing
// waits for a human (said in the audit log and the daemon's log), and the
// daemon clears the flag when it starts again.
func TestApprovalOffFlagLastsUntilRestart(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(bash("echo one && echo two > both.txt")),
		dt.Text("wrote both.txt"),
	)
	if out, err := g.bridgectl(t, "approval", "off"); err != nil {
		t.Fatalf("bridgectl approval off: %v\n%s", err, out)
	}
	if _, err := os.Stat(g.dir().ApprovalOffFlag()); err != nil {
		t.Fatalf("no flag: %v", err)
	}
	c := runJob(t, g.URL(), "Write both.txt.", ws)
	if c.P.Status != "done" {
		t.Fatalf("%s: %s", c.P.Status, c.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "both.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("both.txt: %q %v", b, err)
	}
	if lines := g.auditOf(t, c.P.JobID); !hasEvent(lines, "approval_off", "allow") || hasEvent(lines, "pending", "") {
		t.Errorf("audit: %v", lines)
	}
	if log := string(g.LogBytes()); !strings.Contains(log, "HUMAN APPROVAL IS OFF for this job") {
		t.Error("the daemon's log does not say approval is off for the job")
	}
	g.Restart()
	if _, err := os.Stat(g.dir().ApprovalOffFlag()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the flag survived a restart: %v", err)
	}
	var info map[string]any
	if b, err := os.ReadFile(g.dir().DaemonInfoFile()); err != nil || json.Unmarshal(b, &info) != nil || info["approval"] != "on" {
		t.Errorf("daemon.json after restart: %v %v", info, err)
	}
}

// The sandbox switch: without bubblewrap on PATH every job is refused with
// the install hint (daemon.json: sandbox unavailable); with BRIDGE_SANDBOX=off
// jobs run without it, said loudly (daemon.json: sandbox off).
func TestSandboxSwitch(t *testing.T) {
	t.Parallel()
	daemonInfo := func(t *testing.T, g *guardedBridge) map[string]any {
		t.Helper()
		var info map[string]any
		b, err := os.ReadFile(g.dir().DaemonInfoFile())
		if err != nil || json.Unmarshal(b, &info) != nil {
			t.Fatalf("daemon.json: %s %v", b, err)
		}
		return info
	}
	t.Run("bubblewrap missing", func(t *testing.T) {
		t.Parallel()
		g := startGuardedBridge(t, map[string]string{"PATH": t.TempDir()})
		if info := daemonInfo(t, g); info["sandbox"] != "unavailable" {
			t.Errorf("daemon.json: %v", info)
		}
		cs := goSDKClient(t, g.URL())
		c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "x", "workspace": g.workspace(t, nil)}, nil)
		if !c.IsError || !strings.Contains(c.Text, "OS sandbox") || !strings.Contains(c.Text, "apt-get install bubblewrap socat") || !strings.Contains(c.Text, "BRIDGE_SANDBOX=off") {
			t.Errorf("IsError %v: %s", c.IsError, c.Text)
		}
		if snaps, _ := jobs.LoadAll(g.dir()); len(snaps) != 0 || len(g.d.AnthropicRequests()) != 0 {
			t.Errorf("a refused job left %d snapshots and %d model calls", len(snaps), len(g.d.AnthropicRequests()))
		}
		if log := string(g.LogBytes()); !strings.Contains(log, "agent jobs are refused: the OS sandbox cannot run") {
			t.Error("the log does not say jobs are refused")
		}
	})
	t.Run("sandbox off", func(t *testing.T) {
		t.Parallel()
		g := startGuardedBridge(t, map[string]string{"BRIDGE_SANDBOX": "off"})
		if info := daemonInfo(t, g); info["sandbox"] != "off" || info["approval"] != "on" {
			t.Errorf("daemon.json: %v", info)
		}
		ws := g.workspace(t, nil)
		g.d.ScriptAnthropic(dt.ToolCalls(bash("echo unsandboxed")), dt.Func(func(r dt.Request) dt.Turn {
			return dt.Text(strings.Join(r.ToolResultTexts(), ""))
		}))
		c := runJob(t, g.URL(), "Say it.", ws)
		if c.P.Status != "done" || c.P.Result != "unsandboxed" {
			t.Fatalf("%s %q: %s", c.P.Status, c.P.Result, c.Text)
		}
		settings, err := os.ReadFile(filepath.Join(g.dir().HarnessDir(c.P.JobID), "settings.json"))
		if err != nil || strings.Contains(string(settings), `"sandbox"`) || !strings.Contains(string(settings), `"ask"`) {
			t.Errorf("settings: %s %v", settings, err)
		}
		if log := string(g.LogBytes()); !strings.Contains(log, "OS SANDBOX IS OFF (BRIDGE_SANDBOX=off)") || !strings.Contains(log, "OS SANDBOX IS OFF for this job") {
			t.Error("the log does not say the sandbox is off")
		}
	})
}

// A decision file that bridgectl did not write — another process of the
// owner's user, or a file-tool write a job redirected into the queue —
// still leaves the call it lets run on record: the approval child itself
// writes an "applied" allow before the command runs, so the audit log never
// lacks the allow of a call that ran (before, it held only "pending").
func TestApprovalAppliedIsRecordedByTheChild(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	ws := g.workspace(t, nil)
	g.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "echo alpha && touch ran", "description": "echo"})),
		dt.Func(func(r dt.Request) dt.Turn { return dt.Text("output: " + strings.Join(r.ToolResultTexts(), " | ")) }),
	)
	cs, c := startWaitingJob(t, g, "Echo.", ws)
	id, req := c.P.JobID, c.P.Approval
	body := fmt.Sprintf(`{"version":1,"id":%q,"approved":true,"reason":"written by hand","by":"someone","kind":"human","decided":%q}`,
		req.ID, time.Now().UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(g.dir().Approvals(), req.ID+".decision.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c = waitSettled(t, cs, id, jobLimit)
	if _, err := os.Stat(filepath.Join(ws, "ran")); err != nil {
		t.Fatalf("the approved command did not run (%v): %s: %s", err, c.P.Status, c.Text)
	}
	lines := g.auditOf(t, req.ID)
	if !hasEvent(lines, "applied", "allow") {
		t.Errorf("a call ran with no allow of it on record: %v", lines)
	}
	if hasEvent(lines, "human", "") {
		t.Errorf("a human record appeared though no human decided through bridgectl: %v", lines)
	}
}

// A poll of a job waiting for a human waits for the person: with nobody
// answering it returns after its whole wait_seconds, still waiting; with a
// human answering during a 40 s poll it returns once they answer, with the
// job running again or done. Before, it returned at once and the host spun.
func TestPollWaitsForTheHuman(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	g.d.ScriptAnthropic(dt.ToolCalls(bash("echo one && echo two")), dt.Text("done"))
	cs, c := startWaitingJob(t, g, "Print one and two.", g.workspace(t, nil))
	id, req := c.P.JobID, c.P.Approval
	if !strings.Contains(c.P.NextStep, "wait_seconds 40") || !strings.Contains(c.P.NextStep, "A person must decide") {
		t.Errorf("next_step %q", c.P.NextStep)
	}
	began := time.Now()
	c = callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 3}, nil)
	if waited := time.Since(began); waited < 3*time.Second || c.P.Status != string(jobs.StatusWaitingApproval) || c.P.Approval == nil || c.P.Approval.ID != req.ID {
		t.Fatalf("a 3 s poll with nobody answering returned after %v: %s %+v", waited, c.P.Status, c.P.Approval)
	}
	answered := make(chan time.Time, 1)
	go func() {
		time.Sleep(2 * time.Second) // the poll below is under way
		if err := g.queue().Decide(req.ID, true, "e2e", "e2e"); err != nil {
			t.Error(err)
		}
		answered <- time.Now()
	}()
	began = time.Now()
	c = callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id, "wait_seconds": 40}, nil)
	at := <-answered
	if c.P.Status == string(jobs.StatusWaitingApproval) || time.Since(began) >= 40*time.Second || time.Now().Before(at) {
		t.Fatalf("a 40 s poll while the human answered: %s after %v", c.P.Status, time.Since(began))
	}
	t.Logf("the poll returned %v after the human answered, %s", time.Since(at), c.P.Status)
}

package e2e

// A full state dir during a job, with the real parts: `bridge serve` on a
// state dir in a small tmpfs, the pinned Claude Code, its approval child and
// the double.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/fulldisk"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The state dir fills up while a job runs. The command the job tries next
// is allowed by the rules but is denied, unrun, because its audit record
// cannot be written; the job's true end reaches its snapshot once space
// returns, and a restart keeps that end. The disk is kept full (Claude Code
// deletes its temp files, which frees pages), and the command is long, so
// its record never fits in what is left of the audit log's last page.
func TestFullStateDirDuringAJob(t *testing.T) {
	t.Parallel()
	// Mounted first, so it is unmounted last: after the bridge has stopped.
	fs := fulldisk.Mount(t, 64<<20)
	state := filepath.Join(fs.Dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assertNoJobProcesses(t, state) })
	registerAgentState(state)
	d := startDouble(t)
	a := &agentBridge{d: d, root: root, bridgeProc: startBridge(t, mergeEnv(doubleEnv(d), map[string]string{
		"BRIDGE_STATE_DIR":       state,
		"BRIDGE_CLAUDE_BIN":      claudeBin(t),
		"DEEPSEEK_ALLOWED_ROOTS": root,
	}))}
	dir := statedir.Dir{Root: state}
	cs := goSDKClient(t, a.URL())

	var dirs []string
	for i := range 40 {
		dirs = append(dirs, fmt.Sprintf("after-%02d-%s", i, strings.Repeat("d", 100)))
	}
	mkdir := "mkdir " + strings.Join(dirs, " ")
	// ls runs, recorded; tail waits for the test; mkdir comes once the disk
	// is full; then the final answer.
	id, ws := a.startTailJob(t, cs, dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "ls", "description": "look"})))
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": mkdir, "description": "make dirs"})),
		dt.Text("Finished."),
	)
	before := assertSnapshotFile(t, dir, id, jobs.StatusRunning)

	fs.KeepFull()
	killJobCommand(t, id, "tail")
	c := waitSettled(t, cs, id, jobLimit)
	if c.IsError || !jobs.Status(c.P.Status).Final() {
		t.Fatalf("the job did not end: %s: %s", c.P.Status, c.Text)
	}
	denied := false
	for _, r := range toolResults(a.d) {
		denied = denied || strings.Contains(r, "could not write this tool call's audit record")
	}
	if !denied {
		t.Errorf("the model was not told mkdir was denied for its record: %q", toolResults(a.d))
	}
	if _, err := os.Stat(filepath.Join(ws, dirs[0])); !os.IsNotExist(err) {
		t.Errorf("mkdir ran although its audit record could not be written (stat: %v)", err)
	}
	// The disk still holds the state from before the fill; status says why.
	if s, err := jobs.Load(dir, id); err != nil || s.Status.Final() {
		t.Errorf("on the full disk the snapshot reads %s (%v): its end should not have fit", s.Status, err)
	}
	status := bridgectlStatus(t, a.bridgeProc)
	for _, want := range []string{"STATE DIR: FULL", "AUDIT:     audit records could not be written"} {
		if !strings.Contains(status, want) {
			t.Errorf("status on the full disk lacks %q:\n%s", want, status)
		}
	}

	fs.Free()
	var disk jobs.Snapshot
	if !poll.Until(15*time.Second, func() bool {
		var err error
		disk, err = jobs.Load(dir, id)
		return err == nil && disk.Status.Final()
	}) {
		t.Fatalf("the job's end never reached the disk once space returned: %s", disk.Status)
	}
	if string(disk.Status) != c.P.Status || disk.Nonce != c.P.Nonce || disk.Steps != c.P.Steps || disk.Steps <= before.Steps {
		t.Fatalf("on disk %s nonce %q %d steps; the job ended %s nonce %q %d steps", disk.Status, disk.Nonce, disk.Steps, c.P.Status, c.P.Nonce, c.P.Steps)
	}

	a.Restart()
	cs = goSDKClient(t, a.URL())
	again := callAgent(t, t.Context(), cs, "deepseek_agent_poll", map[string]any{"job_id": id}, nil)
	if again.IsError || again.P.Status != c.P.Status || again.P.Nonce != c.P.Nonce {
		t.Fatalf("after a restart: %s nonce %q (%s); want the recorded end %s", again.P.Status, again.P.Nonce, again.Text, c.P.Status)
	}
	assertSnapshotFile(t, dir, id, jobs.Status(c.P.Status))
	checkEveryRunCommandRecorded(t, dir, id, disk)
}

// killJobCommand kills the job's process whose command line starts with
// prefix (waitJobCommand found it running).
func killJobCommand(t *testing.T, id, prefix string) {
	t.Helper()
	for _, pid := range harness.JobProcesses(id) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if strings.HasPrefix(string(b), prefix) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("job %s runs no %q", id, prefix)
}

// checkEveryRunCommandRecorded fails for a command the snapshot says ran
// (it has an exit code) without an allow in the audit log, and for a torn
// line in the log.
func checkEveryRunCommandRecorded(t *testing.T, dir statedir.Dir, id string, s jobs.Snapshot) {
	t.Helper()
	raw, err := os.ReadFile(dir.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("torn audit line %q: %v", l, err)
		}
		if r["job_id"] == id && r["decision"] == "allow" {
			sum, _ := r["summary"].(string)
			allowed[sum] = true
		}
	}
	ran := 0
	for _, cmd := range s.Commands {
		if cmd.ExitCode == nil {
			continue
		}
		ran++
		if !allowed["Bash: "+cmd.Command] {
			t.Errorf("command %q ran without an allow in the audit log", cmd.Command)
		}
	}
	if ran == 0 {
		t.Errorf("no command ran: the job proves nothing (%+v)", s.Commands)
	}
}

// bridgectlStatus runs the real `bridgectl status` against the bridge's
// state dir and config.
func bridgectlStatus(t *testing.T, b *bridgeProc) string {
	t.Helper()
	cmd := exec.Command(binary(t, "bridgectl"), "status")
	for k, v := range b.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bridgectl status: %v\n%s", err, out)
	}
	return string(out)
}

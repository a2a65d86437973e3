package e2e

// Holes of the job policy an attack found, end to end: the floor's lists
// must reach the jail and the approval child as the owner wrote them.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// The owner's floor says write_paths out/**; a caller asks for src/**. The
// rules refuse a named write to either (a value must pass both lists), and
// the jail, which holds the writes of a script the rules cannot see, makes
// writable only the dirs both lists share: here none. Approval on, nobody
// answers: python3 with a script runs by rule.
func TestCallersWritePathsStayInsideTheFloorsJail(t *testing.T) {
	t.Parallel()
	floor := filepath.Join(t.TempDir(), "floor.json")
	if err := os.WriteFile(floor, []byte(`{"write_paths":["out/**"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, c := runScriptWritingSrc(t, map[string]string{"BRIDGE_POLICY_FLOOR_FILE": floor}, "src/**")
	if _, err := os.Stat(filepath.Join(ws, "src", "planted.txt")); err == nil {
		t.Errorf("a script wrote src/planted.txt under the floor's write_paths out/** (enforced policy %+v)", c.P.Policy)
	}
}

// runScriptWritingSrc runs a job (approval on, nobody answers) whose model
// runs `python3 w.py`, a script that writes src/planted.txt, under
// write_paths writePaths, and returns its workspace and settled payload.
func runScriptWritingSrc(t *testing.T, env map[string]string, writePaths string) (string, agentCall) {
	t.Helper()
	a := startAgentBridge(t, false, mergeEnv(map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "3000"}, env))
	ws := a.workspace(t, map[string]string{"w.py": "open('src/planted.txt', 'w').write('x')\nprint('WROTE')\n"})
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.d.ScriptAnthropic(dt.ToolCalls(bash("python3 w.py")), dt.Text("done"))
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Write.", "workspace": ws, "policy": map[string]any{"write_paths": []string{writePaths}},
	}, nil)
	if c.IsError {
		t.Fatalf("start: %s", c.Text)
	}
	if c.P.Status != string(jobs.StatusDone) {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	return ws, c
}

// The owner's floor {"commands": []} — no command runs unattended — reaches
// the approval child as an empty list (not as no list), so an allow-listed
// command waits for a human. Approval on, nobody answers.
func TestFloorWithNoCommandsRunsNoCommandUnattended(t *testing.T) {
	t.Parallel()
	floor := filepath.Join(t.TempDir(), "floor.json")
	if err := os.WriteFile(floor, []byte(`{"commands":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_POLICY_FLOOR_FILE": floor, "BRIDGE_APPROVAL_TIMEOUT_MS": "3000"})
	ws := a.workspace(t, nil)
	a.d.ScriptAnthropic(dt.ToolCalls(bash("touch ran-unattended")), dt.Text("done"))
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Touch.", "workspace": ws}, nil)
	if c.IsError {
		t.Fatalf("start: %s", c.Text)
	}
	if c.P.Status != string(jobs.StatusDone) {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran-unattended")); err == nil {
		t.Errorf("touch ran without a human under the floor's empty commands list (ledger %v)", verdicts(c.P))
	}
}

// Without a jail (BRIDGE_SANDBOX=off here, macOS always) nothing in the OS
// holds write_paths: a python3 script, whose writes the rules cannot see,
// waits for a human instead of running by rule. Approval on, nobody answers.
func TestWritePathsWithoutAJailHoldScriptsForAHuman(t *testing.T) {
	t.Parallel()
	ws, c := runScriptWritingSrc(t, map[string]string{"BRIDGE_SANDBOX": "off"}, "out/**")
	if _, err := os.Stat(filepath.Join(ws, "src", "planted.txt")); err == nil {
		t.Errorf("a script wrote src/planted.txt under write_paths out/** with no jail (ledger %v)", verdicts(c.P))
	}
	if v := verdicts(c.P); len(v) == 0 || strings.Contains(strings.Join(v, " "), "allowed_by_rule") {
		t.Errorf("ledger %v: python3 ran by rule, want it held for a human (timed out)", v)
	}
}

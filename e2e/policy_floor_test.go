package e2e

// The owner's policy floor (BRIDGE_POLICY_FLOOR_FILE) end to end: it beats a
// caller who asks for more, an invalid one stops the daemon, and bridgectl
// shows where it came from.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// A floor that removes Bash beats a caller who asks for Bash: Bash is not
// offered to the model, and a scripted Bash call is refused as not offered.
// A floor max_steps of 5 beats the caller's 50: the sixth tool call stops
// the job.
func TestPolicyFloorBeatsTheCaller(t *testing.T) {
	t.Parallel()
	floor := filepath.Join(t.TempDir(), "floor.json")
	if err := os.WriteFile(floor, []byte(`{"tools":["Read","Grep","Glob","Write"],"max_steps":5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_POLICY_FLOOR_FILE": floor})
	ws := a.workspace(t, map[string]string{"a.txt": "a\n"})
	read := dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "a.txt")}))
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "touch pwned", "description": "touch"})),
		read, read, read, read, read,
		dt.Text("should not get here"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Work.", "workspace": ws,
		"policy": map[string]any{"tools": []string{"Bash", "Read"}, "max_steps": 50},
	}, nil)
	if c.IsError {
		t.Fatalf("start: %s", c.Text)
	}
	if c.P.Status != string(jobs.StatusDone) {
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
	}
	if c.P.Status != string(jobs.StatusError) || !strings.Contains(c.P.Error, "step ceiling of 5 tool calls") {
		t.Errorf("status %s error %q, want the floor's step ceiling of 5", c.P.Status, c.P.Error)
	}
	if p := c.P.Policy; p == nil || !slices.Equal(p.Tools, []string{"Read"}) || p.MaxSteps != 5 || p.Floor != floor {
		t.Errorf("enforced policy = %+v, want tools [Read], max_steps 5, floor %s", p, floor)
	}
	assertOffered(t, a.d, []string{"Read"}, "Bash", "Write")
	if got := verdicts(c.P); len(got) == 0 || got[0] != "Bash "+policy.NotOffered {
		t.Errorf("ledger = %v, want Bash not offered first", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("the Bash the floor removed ran")
	}
	if snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusError); snap.MaxSteps != 5 || snap.Policy == nil || snap.Policy.Floor != floor {
		t.Errorf("snapshot max_steps %d policy %+v", snap.MaxSteps, snap.Policy)
	}
	status := bridgectlStatus(t, a.bridgeProc)
	if !strings.Contains(status, "floor:     "+floor+" (reported by the daemon)") {
		t.Errorf("bridgectl status does not say where the floor came from:\n%s", status)
	}
}

// An invalid floor stops the daemon at start, naming the file, the line and
// the reason; bridgectl doctor says the same; BRIDGE_REQUIRE_POLICY refuses
// a start without a policy.
func TestPolicyFloorInvalidStopsTheDaemon(t *testing.T) {
	t.Parallel()
	floor := filepath.Join(t.TempDir(), "floor.json")
	if err := os.WriteFile(floor, []byte("{\n  \"tools\": [\"Read\"],\n  \"max_steps\": \"five\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDouble(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PORT=0", "BRIDGE_STATE_DIR=" + t.TempDir(),
		"MCP_PATH_SECRET=floor-test-secret-0123456789", "DEEPSEEK_BASE_URL=" + d.URL(), "DEEPSEEK_API_KEY=" + d.Key(),
		"BRIDGE_POLICY_FLOOR_FILE=" + floor, "BRIDGE_ENV_FILE=" + emptyEnvFile(t)}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "bridge"), "serve")
	cmd.Env, cmd.Dir = env, t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil || err == nil {
		t.Fatalf("bridge serve started with an invalid floor (err %v):\n%s", err, out.Bytes())
	}
	for _, want := range []string{floor, "line 3", "max_steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out.Bytes())
		}
	}
	doc := exec.CommandContext(ctx, binary(t, "bridgectl"), "doctor", "--dry")
	doc.Env, doc.Dir = env, t.TempDir()
	dout, _ := doc.CombinedOutput()
	if !strings.Contains(string(dout), "policy floor: policy floor "+floor+": line 3") {
		t.Errorf("bridgectl doctor does not report the invalid floor:\n%s", dout)
	}

	a := startAgentBridge(t, false, map[string]string{"BRIDGE_REQUIRE_POLICY": "on"})
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{"task": "Work.", "workspace": a.workspace(t, nil)}, nil)
	if !c.IsError || !strings.Contains(c.Text, "this bridge requires a policy for every job (BRIDGE_REQUIRE_POLICY)") {
		t.Errorf("a start without a policy: IsError %v: %s", c.IsError, c.Text)
	}
}

// emptyEnvFile is a .env that sets nothing (a named .env must exist).
func emptyEnvFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

package e2e

// End-to-end tests of job policies (issue 12): a real `bridge serve`, the
// real Claude Code in its jail and sandbox, the approval child, and the
// double scripting the model. What is checked is what the model was offered
// (the double's recorded requests), the bytes on disk, and the ledger.

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// treeSums maps every file under dir (relative path) to its SHA-256.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// verdicts lists the ledger as "Tool verdict" lines.
func verdicts(p tools.AgentJobPayload) []string {
	var out []string
	for _, e := range p.Ledger {
		out = append(out, e.Tool+" "+e.Verdict)
	}
	return out
}

// assertOffered fails unless every scripted request offered exactly the
// built-in tools want (Claude Code may add its own deferred-tool marker).
func assertOffered(t *testing.T, d *dt.Server, want []string, absent ...string) {
	t.Helper()
	reqs := d.ScriptedAnthropicRequests()
	if len(reqs) == 0 {
		t.Fatal("no scripted request reached the double")
	}
	for i, r := range reqs {
		names := r.ToolNames()
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("request %d does not offer %s: %v", i, w, names)
			}
		}
		for _, a := range absent {
			if slices.Contains(names, a) {
				t.Errorf("request %d offers %s, which the policy leaves out: %v", i, a, names)
			}
		}
	}
}

// A read-only job (tools Read, Grep, Glob) answers from the files; a
// scripted Write and a scripted Bash are not offered to the model at all,
// the bytes on disk are unchanged, and the ledger shows each refusal.
func TestPolicyReadOnlyJobByTools(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil) // approval on, nobody answers
	witness := randomWitness(t)
	ws := a.workspace(t, map[string]string{"notes.txt": witness + "\n"})
	before := treeSums(t, ws)
	var read string
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "notes.txt")})),
		dt.Func(func(r dt.Request) dt.Turn {
			read = strings.Join(r.ToolResultTexts(), "\n")
			return dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "overwritten"}))
		}),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "rm notes.txt", "description": "remove"})),
		dt.Func(func(dt.Request) dt.Turn { return dt.Text("The notes say: " + read) }),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Tell me what notes.txt says.", "workspace": ws,
		"policy": map[string]any{"tools": []string{"Read", "Grep", "Glob"}},
	}, nil)
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("start = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	if !strings.Contains(c.P.Result, witness) {
		t.Errorf("the answer does not come from the file: %q", c.P.Result)
	}
	if got := treeSums(t, ws); !mapsEqual(got, before) {
		t.Errorf("the workspace changed: before %v, after %v", before, got)
	}
	assertOffered(t, a.d, []string{"Read", "Grep", "Glob"}, "Write", "Bash", "Edit")
	want := []string{"Read " + policy.AllowedByRule, "Write " + policy.NotOffered, "Bash " + policy.NotOffered}
	if got := verdicts(c.P); !slices.Equal(got, want) || c.P.LedgerTotal != 3 {
		t.Errorf("ledger = %v (total %d), want %v", got, c.P.LedgerTotal, want)
	}
	if c.P.Policy == nil || !slices.Equal(c.P.Policy.Tools, []string{"Read", "Grep", "Glob"}) || c.P.Policy.Floor != "none" {
		t.Errorf("enforced policy = %+v", c.P.Policy)
	}
	snap := assertSnapshotFile(t, a.dir(), c.P.JobID, jobs.StatusDone)
	var traced []string
	for _, e := range snap.Trace {
		if e.Kind == "verdict" {
			traced = append(traced, e.Tool+" "+strings.SplitN(e.Detail, ":", 2)[0])
		}
	}
	if !slices.Equal(traced, want) {
		t.Errorf("the trace's ledger = %v, want %v", traced, want)
	}
}

// write_paths [] makes a job read-only in the OS sandbox too: a command the
// rules let run (an allow-listed python3 script, with human approval off)
// still cannot write, and a Write is refused by the policy without asking.
func TestPolicyReadOnlyIsEnforcedByTheOS(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, unattended)
	ws := a.workspace(t, map[string]string{
		"w.py":      "open('planted.txt', 'w').write('x')\n",
		"notes.txt": "keep\n",
	})
	before := treeSums(t, ws)
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "python3 w.py", "description": "write"})),
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "new.txt"), "content": "new"})),
		dt.Text("done"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Run w.py.", "workspace": ws, "policy": map[string]any{"write_paths": []string{}},
	}, nil)
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("start = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	if got := treeSums(t, ws); !mapsEqual(got, before) {
		t.Errorf("the workspace changed: before %v, after %v", before, got)
	}
	if len(c.P.Commands) != 1 || c.P.Commands[0].ExitCode == nil || *c.P.Commands[0].ExitCode == 0 {
		t.Errorf("python3 w.py did not fail in the read-only sandbox: %+v", c.P.Commands)
	}
	want := []string{"Bash " + policy.AllowedByRule, "Write " + policy.DeniedByPolicy}
	if got := verdicts(c.P); !slices.Equal(got, want) {
		t.Errorf("ledger = %v, want %v", got, want)
	}
	if len(c.P.Ledger) == 2 && !strings.Contains(c.P.Ledger[1].Reason, "outside write_paths (none: the job is read-only)") {
		t.Errorf("the Write's reason = %q", c.P.Ledger[1].Reason)
	}
	if c.P.Policy == nil || c.P.Policy.WritePaths == nil || len(c.P.Policy.WritePaths) != 0 {
		t.Errorf("enforced policy does not say write_paths []: %+v", c.P.Policy)
	}
}

// write_paths ["out/**"] lets a Write and an allow-listed cp into out/ run,
// and refuses both into src/, without a human; the model gets each refusal
// as a tool error with its reason. A script whose writes the rules cannot
// see writes out/ but not src/: the jail holds write_paths too.
func TestPolicyWritePaths(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "20000"}) // approval on, nobody answers
	ws := a.workspace(t, map[string]string{"seed.txt": "seed\n",
		"w.py": "open('out/ok.txt', 'w').write('ok')\nopen('src/planted.txt', 'w').write('x')\n"})
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "out", "a.txt"), "content": "A"})),
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "src", "b.txt"), "content": "B"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "cp seed.txt out/", "description": "copy"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "cp seed.txt src/", "description": "copy"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "python3 w.py", "description": "script"})),
		dt.Text("done"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Write the outputs.", "workspace": ws, "policy": map[string]any{"write_paths": []string{"out/**"}},
	}, nil)
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("start = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	for rel, want := range map[string]string{"out/a.txt": "A", "out/seed.txt": "seed\n", "out/ok.txt": "ok", "src/b.txt": "", "src/seed.txt": "", "src/planted.txt": ""} {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		switch {
		case want == "" && err == nil:
			t.Errorf("%s was written (%q) although it is outside write_paths", rel, b)
		case want != "" && string(b) != want:
			t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
		}
	}
	want := []string{"Write " + policy.AllowedByRule, "Write " + policy.DeniedByPolicy, "Bash " + policy.AllowedByRule, "Bash " + policy.DeniedByPolicy, "Bash " + policy.AllowedByRule}
	if got := verdicts(c.P); !slices.Equal(got, want) {
		t.Errorf("ledger = %v, want %v", got, want)
	}
	if n := len(c.P.Commands); n != 3 || c.P.Commands[2].ExitCode == nil || *c.P.Commands[2].ExitCode == 0 {
		t.Errorf("the script's write into src/ did not fail: %+v", c.P.Commands)
	}
	// Each refusal reached the model as a tool error with its reason.
	var refusals int
	for _, r := range a.d.ScriptedAnthropicRequests() {
		for _, txt := range r.ToolResultTexts() {
			if strings.Contains(txt, "the job's policy:") && strings.Contains(txt, "outside write_paths (out/**)") {
				refusals++
			}
		}
	}
	if refusals != 2 {
		t.Errorf("%d refusals reached the model with their reason, want 2", refusals)
	}
	if pending := auditEvents(t, a, "pending"); pending != 0 {
		t.Errorf("%d requests went to a human", pending)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// auditEvents counts the audit log's records of one event.
func auditEvents(t *testing.T, a *agentBridge, event string) int {
	t.Helper()
	b, err := os.ReadFile(a.dir().AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"event":"`+event+`"`)
}

// deny_paths, commands with on_other_commands deny, and network deny, in one
// job with nobody to ask: a read of a deny path and an unlisted command are
// refused by the policy without a human, the listed command runs, and
// WebFetch is not offered.
func TestPolicyDenyPathsCommandsAndNetwork(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "20000"})
	ws := a.workspace(t, map[string]string{"notes.txt": "n\n"})
	if err := os.MkdirAll(filepath.Join(ws, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secrets", "key.txt"), []byte("canary-"+randomWitness(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.d.ScriptAnthropic(
		dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "secrets", "key.txt")})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "cat secrets/key.txt", "description": "read"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "ls", "description": "list"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "cat notes.txt", "description": "read"})),
		dt.ToolCalls(dt.Call("WebFetch", map[string]any{"url": "https://example.com", "prompt": "x"})),
		dt.Text("done"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
		"task": "Look around.", "workspace": ws, "policy": map[string]any{
			"deny_paths": []string{"secrets/**"}, "commands": []string{"cat"}, "on_other_commands": "deny", "network": "deny"},
	}, nil)
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("start = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	want := []string{"Read " + policy.DeniedByPolicy, "Bash " + policy.DeniedByPolicy, "Bash " + policy.DeniedByPolicy, "Bash " + policy.AllowedByRule, "WebFetch " + policy.NotOffered}
	if got := verdicts(c.P); !slices.Equal(got, want) {
		t.Errorf("ledger = %v, want %v", got, want)
	}
	for _, r := range a.d.ScriptedAnthropicRequests() {
		for _, txt := range r.ToolResultTexts() {
			if strings.Contains(txt, "canary-") {
				t.Errorf("the deny path's content reached the model: %q", txt)
			}
		}
	}
	assertOffered(t, a.d, []string{"Bash", "Read"}, "WebFetch", "WebSearch")
	if pending := auditEvents(t, a, "pending"); pending != 0 {
		t.Errorf("%d requests went to a human", pending)
	}
	if len(c.P.Ledger) == 5 && !strings.Contains(c.P.Ledger[2].Reason, "on_other_commands deny") {
		t.Errorf("the unlisted command's reason = %q", c.P.Ledger[2].Reason)
	}
}

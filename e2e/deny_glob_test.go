package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// deny_paths "secrets/**" (a glob) and "private" (a literal): a Grep of the
// whole workspace, and grep -r, name neither. With approval on they go to a
// human (nobody answers here). With approval off they run, and what holds
// is the glob's expansion at the job's start into the literal paths Claude
// Code's deny rules hide from its file tools and the OS sandbox from its
// commands, as the literal entry is.
func TestGrepFromTheWorkspaceSkipsDenyPathGlobs(t *testing.T) {
	t.Parallel()
	for _, approval := range []string{"on", "off"} {
		t.Run("approval "+approval, func(t *testing.T) {
			t.Parallel()
			a := startAgentBridge(t, false, map[string]string{"BRIDGE_APPROVAL_TIMEOUT_MS": "3000", "BRIDGE_CC_APPROVAL": approval})
			globCanary, literalCanary := "glob-deny-canary-"+randomWitness(t), "literal-deny-canary-"+randomWitness(t)
			ws := a.workspace(t, map[string]string{"README": "readme canary\n"})
			for rel, body := range map[string]string{"secrets/key.txt": globCanary + "\n", "secrets/sub/more.txt": globCanary + "\n", "private/note.txt": literalCanary + "\n"} {
				p := filepath.Join(ws, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a.d.ScriptAnthropic(dt.ToolCalls(
				dt.Call("Grep", map[string]any{"pattern": "canary", "path": ws, "output_mode": "content"}),
				bash("grep -r canary . ; echo GREP-RAN"),
			), dt.Text("done"))
			cs := goSDKClient(t, a.URL())
			c := callAgent(t, t.Context(), cs, "deepseek_agent_start", map[string]any{
				"task": "Search.", "workspace": ws,
				"policy": map[string]any{"tools": []string{"Grep", "Read", "Bash"}, "deny_paths": []string{"secrets/**", "private"}},
			}, nil)
			if c.IsError {
				t.Fatalf("start: %s", c.Text)
			}
			if c.P.Status != string(jobs.StatusDone) {
				c = waitSettled(t, cs, c.P.JobID, jobLimit)
			}
			results := strings.Join(a.d.LastToolResultTexts(dt.SideAnthropic), "\n")
			t.Logf("ledger %v; the searches returned:\n%s", verdicts(c.P), results)
			if strings.Contains(results, globCanary) {
				t.Errorf("a search read a file below the deny path glob secrets/**")
			}
			if strings.Contains(results, literalCanary) {
				t.Errorf("a search read a file below the literal deny path private")
			}
			if approval == "off" && !strings.Contains(results, "GREP-RAN") {
				t.Errorf("with approval off grep -r did not run, so the test proves nothing of the OS sandbox")
			}
		})
	}
}

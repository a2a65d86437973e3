package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// TestJobCannotReachTheApprovalQueue is the race an attack review won
// against the queue in the jail, three times over: a command in the
// background swaps a workspace folder for a link to <state>/approvals in a
// loop while the model issues 110 Writes into that folder, and a careless
// human approves every command. Nothing of the state dir is in the jail:
// no file lands in the approval queue, and a shell in the jail finds
// neither the queue, nor the audit log, nor the switches, nor the daemon's
// root through /proc.
func TestJobCannotReachTheApprovalQueue(t *testing.T) {
	t.Parallel()
	g := startGuardedBridge(t, nil)
	state, appr := g.StateDir(), g.dir().Approvals()
	// The state dir's path, cut in two so that no command names it (the
	// rules deny that before anyone is asked): the human approves the rest.
	half := len(state) / 2
	p := fmt.Sprintf(`p="$(printf %%s '%s' '%s')"`, state[:half], state[half:])
	daemon, err := os.ReadFile(filepath.Join(state, "daemon.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if i := strings.Index(string(daemon), `"pid":`); i >= 0 {
		fmt.Sscanf(strings.TrimSpace(string(daemon)[i+6:]), "%d", &pid)
	}
	if pid == 0 {
		t.Fatalf("no pid in daemon.json: %s", daemon)
	}
	cs := goSDKClient(t, g.URL())
	for run := range 3 {
		ws := g.workspace(t, map[string]string{"README.md": "hi\n"})
		swap := p + `; for i in $(seq 1 4000); do rm -rf d; ln -s "$p/approvals" d; rm -f d; mkdir -p d; done`
		var writes []dt.ToolCall
		for i := range 110 {
			writes = append(writes, dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "d", fmt.Sprintf("x%d.request.json", i)),
				"content": fmt.Sprintf(`{"version":1,"id":"%032x","job_id":"planted"}`, i)}))
		}
		look := p + fmt.Sprintf(`; ls "$p/approvals" "$p/audit.log" "$p/switches" "$p" /proc/%d/root"$p/approvals" 2>&1; echo looked`, pid)
		g.d.ScriptAnthropic(
			dt.ToolCalls(dt.Call("Bash", map[string]any{"command": swap, "description": "swap", "run_in_background": true})),
			dt.ToolCalls(writes...),
			dt.ToolCalls(bash(look)),
			dt.Func(func(r dt.Request) dt.Turn { return dt.Text("done") }),
		)
		id := startJob(t, cs, "Write the files.", ws).P.JobID
		approved := 0
		if !poll.Until(2*jobLimit, func() bool {
			if s, err := jobs.Load(g.dir(), id); err == nil && s.Status.Final() {
				return true
			}
			for _, pr := range g.pendingOf(t, id) {
				if err := g.queue().Decide(pr.ID, pr.Tool == "Bash", "e2e: the careless human", "e2e"); err == nil && pr.Tool == "Bash" {
					approved++
				}
			}
			return false
		}) {
			t.Fatalf("run %d: the job did not end within %v", run, 2*jobLimit)
		}
		c := waitSettled(t, cs, id, jobLimit)
		if c.P.Status != "done" || approved < 2 {
			t.Fatalf("run %d: %s after %d steps, %d commands approved: %s", run, c.P.Status, c.P.Steps, approved, c.Text)
		}
		ents, err := os.ReadDir(appr)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "x") || strings.Contains(e.Name(), "planted") {
				t.Errorf("run %d: %s landed in the approval queue", run, e.Name())
			}
			if b, _ := os.ReadFile(filepath.Join(appr, e.Name())); strings.Contains(string(b), `"planted"`) {
				t.Errorf("run %d: a planted request in the queue: %s", run, e.Name())
			}
		}
		results := toolResults(g.d)
		seen := results[len(results)-1]
		if !strings.Contains(seen, "looked") {
			t.Fatalf("run %d: the look did not run: %q", run, seen)
		}
		for _, path := range []string{state + "/approvals", state + "/audit.log", state + "/switches", fmt.Sprintf("/proc/%d/root%s/approvals", pid, state)} {
			if !strings.Contains(seen, "cannot access '"+path+"': No such file or directory") {
				t.Errorf("run %d: a shell in the jail may see %s:\n%s", run, path, seen)
			}
		}
		t.Logf("run %d: %d commands approved; the look: %q", run, approved, seen)
	}
}

package harness

import (
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// realClaude is the pinned Claude Code (skipped under -short).
func realClaude(t *testing.T) string { t.Helper(); return testenv.ClaudeBin(t) }

func realSpec(t *testing.T, d *deepseektest.Server) Spec {
	suffix, err := ids.Hex(8)
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		JobID:     "real-" + suffix,
		Task:      "do the scripted thing",
		Workspace: t.TempDir(),
		ConfigDir: filepath.Join(t.TempDir(), "cfg"),
		BaseURL:   d.URL() + "/anthropic",
		Token:     d.Key(),
		Model:     "deepseek-flash",
	}
}

func TestRealClaudeCodeReadWriteAndExitCodes(t *testing.T) {
	bin := realClaude(t)
	t.Parallel()
	d := deepseektest.New()
	t.Cleanup(d.Close)
	spec := realSpec(t, d)
	witness := "k3Jd9QmZ0pLx7VbN2cRt5YwE8aHs1UfG"
	if err := os.WriteFile(filepath.Join(spec.Workspace, "witness.txt"), []byte(witness), 0o644); err != nil {
		t.Fatal(err)
	}
	reversed := []rune(witness)
	slices.Reverse(reversed)
	answer := filepath.Join(spec.Workspace, "answer.txt")
	d.ScriptAnthropic(
		deepseektest.ToolCalls(deepseektest.Call("Read", map[string]any{"file_path": filepath.Join(spec.Workspace, "witness.txt")})),
		deepseektest.ToolCalls(deepseektest.Call("Write", map[string]any{"file_path": answer, "content": string(reversed)})),
		deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]any{"command": "cat answer.txt; exit 4"})),
		deepseektest.ToolCalls(deepseektest.Call("Write", map[string]any{"file_path": "/tmp/outside-" + spec.JobID, "content": "x"})),
		deepseektest.Text("Wrote the reversed witness to answer.txt."),
	)
	c := &ClaudeCode{Bin: bin, Environ: os.Environ()}
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	evs, exit := collect(t, r, 60*time.Second)
	var names []string
	var results []*ToolResult
	var res *Result
	for _, ev := range evs {
		switch ev.Kind {
		case KindToolUse:
			names = append(names, ev.ToolUse.Name)
		case KindToolResult:
			results = append(results, ev.ToolResult)
		case KindResult:
			res = ev.Result
		}
	}
	if !slices.Equal(names, []string{"Read", "Write", "Bash", "Write"}) {
		t.Fatalf("tool calls = %v", names)
	}
	if !res.Succeeded() || res.Text != "Wrote the reversed witness to answer.txt." {
		t.Fatalf("result = %+v, stderr %s", res, exit.Stderr)
	}
	if got, _ := os.ReadFile(answer); string(got) != string(reversed) {
		t.Errorf("answer.txt = %q, want %q", got, string(reversed))
	}
	if results[2].ExitCode == nil || *results[2].ExitCode != 4 {
		t.Errorf("bash exit = %v (%+v)", results[2].ExitCode, *results[2])
	}
	if !results[3].Denied {
		t.Errorf("write outside the workspace was not denied: %+v", *results[3])
	}
	if _, err := os.Stat("/tmp/outside-" + spec.JobID); err == nil {
		os.Remove("/tmp/outside-" + spec.JobID)
		t.Error("the harness wrote outside its workspace")
	}
	if exit.Code != 0 || exit.Stopped {
		t.Errorf("exit = %+v", exit)
	}
	// The model saw the task, and the harness never saw the daemon's key variables.
	reqs := d.AnthropicRequests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].LastUserText(), "do the scripted thing") {
		t.Errorf("task did not reach the model")
	}
	assertTreeGone(t, spec.JobID)
}

func TestRealClaudeCodeStopKillsBashTree(t *testing.T) {
	bin := realClaude(t)
	t.Parallel()
	d := deepseektest.New()
	t.Cleanup(d.Close)
	spec := realSpec(t, d)
	d.ScriptAnthropic(deepseektest.ToolCalls(deepseektest.Call("Bash", map[string]any{"command": "tail -f /dev/null & tail -f /dev/null"})))
	c := &ClaudeCode{Bin: bin, Environ: os.Environ(), StopGrace: 2 * time.Second}
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	sawBash := false
	deadline := time.After(60 * time.Second)
	for !sawBash {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				t.Fatalf("run ended early: %+v", r.Wait())
			}
			sawBash = ev.Kind == KindToolUse && ev.ToolUse.Name == "Bash"
		case <-deadline:
			r.Stop()
			t.Fatal("no Bash call")
		}
	}
	// Wait until the tails run (they carry the job's marker), then stop.
	if !poll.Until(15*time.Second, func() bool { return hasSleep(spec.JobID) }) {
		r.Stop()
		t.Fatal("the Bash command never started")
	}
	r.Stop()
	_, exit := collect(t, r, 30*time.Second)
	if !exit.Stopped {
		t.Errorf("exit = %+v", exit)
	}
	assertTreeGone(t, spec.JobID)
}

func hasSleep(jobID string) bool {
	for _, pid := range JobProcesses(jobID) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if strings.HasPrefix(string(b), "tail") {
			return true
		}
	}
	return false
}

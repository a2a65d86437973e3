package e2e

// deepseek_review end to end: a real `bridge serve`, the real Claude Code in
// its jail, the double scripting the reviewer. What is checked is the scope
// the bridge handed the model (the double's recorded request), the findings
// read back against it, and the workspace's bytes.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// reviewRepo is a git workspace whose second commit, on branch topic,
// plants an off-by-one at line 5 of loop.go and commits a .env.
func reviewRepo(t *testing.T, a *agentBridge) string {
	t.Helper()
	ws := a.workspace(t, map[string]string{
		"loop.go": "package p\n\nfunc sum(xs []int) int {\n\tn := 0\n\tfor i := 0; i < len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n",
		"main.go": "package p\n",
	})
	ownerGit(t, ws, [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "sum"}, {"checkout", "-q", "-b", "topic"}})
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("loop.go", strings.Replace(mustRead(t, filepath.Join(ws, "loop.go")), "i < len(xs)", "i <= len(xs)", 1))
	write(".env", "TOKEN=review-env-canary\n")
	ownerGit(t, ws, [][]string{{"add", "-A"}, {"commit", "-q", "-m", "off by one"}})
	return ws
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A review of a branch against its base: the model is handed the diff (and
// never the committed .env), asks to write and to run a command that would
// (neither is offered, no byte of the workspace changes), and answers with
// three findings: the off-by-one is returned at loop.go line 5, one on a
// file outside the scope and one past loop.go's end are dropped and counted.
func TestReviewFindsAPlantedBugAndChangesNothing(t *testing.T) {
	t.Parallel()
	a := startAgentBridge(t, false, nil) // approvals on: a review never needs a human
	ws := reviewRepo(t, a)
	before := treeSums(t, ws)
	var prompt string
	a.d.ScriptAnthropic(
		dt.Func(func(r dt.Request) dt.Turn {
			prompt = r.LastUserText()
			return dt.ToolCalls(dt.Call("Read", map[string]any{"file_path": filepath.Join(ws, "loop.go")}))
		}),
		dt.ToolCalls(dt.Call("Write", map[string]any{"file_path": filepath.Join(ws, "loop.go"), "content": "fixed"})),
		dt.ToolCalls(dt.Call("Edit", map[string]any{"file_path": filepath.Join(ws, "loop.go"), "old_string": "<=", "new_string": "<"})),
		dt.ToolCalls(dt.Call("Bash", map[string]any{"command": "sed -i s/<=/</ loop.go && git commit -am fix", "description": "fix"})),
		dt.Text("One bug.\n```json\n"+`{"verdict":"needs_changes","summary":"sum reads one element past the end of xs.","findings":[`+
			`{"title":"off-by-one reads past the end","body":"i <= len(xs) indexes xs[len(xs)]: use <","priority":0,"confidence":0.95,"file":"loop.go","line_start":5,"line_end":5},`+
			`{"title":"elsewhere","body":"not in the scope","priority":1,"confidence":0.5,"file":"main.go","line_start":1,"line_end":1},`+
			`{"title":"past the end","body":"no such lines","priority":2,"confidence":0.5,"file":"loop.go","line_start":40,"line_end":41}]}`+"\n```"),
	)
	cs := goSDKClient(t, a.URL())
	c := callAgent(t, t.Context(), cs, "deepseek_review", map[string]any{"workspace": ws, "scope": "base:main", "focus": "correctness"}, nil)
	if c.IsError || c.P.Status != "done" {
		t.Fatalf("review = %s (IsError %v): %s", c.P.Status, c.IsError, c.Text)
	}
	if !strings.Contains(prompt, "+\tfor i := 0; i <= len(xs); i++ {") || !strings.Contains(prompt, "Focus on: correctness") {
		t.Errorf("the reviewer was not handed the diff:\n%s", prompt)
	}
	if strings.Contains(prompt, "review-env-canary") || !strings.Contains(prompt, "do not try to read them): .env") {
		t.Errorf("the committed .env is in the prompt, or not named as left out:\n%s", prompt)
	}
	r := c.P.Review
	if r == nil || r.Verdict != "needs_changes" || r.Scope != "base:main" || r.Files != 1 || !slices.Equal(r.LeftOut, []string{".env"}) {
		t.Fatalf("review payload %+v", r)
	}
	if len(r.Findings) != 1 || r.Dropped != 2 {
		t.Fatalf("findings %+v, dropped %d %v: want the off-by-one kept, two dropped", r.Findings, r.Dropped, r.DroppedWhy)
	}
	if f := r.Findings[0]; f.File != "loop.go" || f.LineStart != 5 || f.LineEnd != 5 || f.Priority != 0 || f.Context {
		t.Errorf("the off-by-one: %+v", f)
	}
	if !strings.Contains(c.Text, "[P0, 95%] loop.go:5-5: off-by-one reads past the end") || !strings.Contains(c.Text, "2 finding(s) dropped") {
		t.Errorf("the text does not carry the findings:\n%s", c.Text)
	}
	if got := treeSums(t, ws); !mapsEqual(got, before) {
		t.Errorf("the review changed the workspace: before %v, after %v", before, got)
	}
	want := []string{"Read " + policy.AllowedByRule, "Write " + policy.NotOffered, "Edit " + policy.NotOffered, "Bash " + policy.NotOffered}
	if got := verdicts(c.P); !slices.Equal(got, want) {
		t.Errorf("ledger = %v, want %v", got, want)
	}
	if p := c.P.Policy; p == nil || !slices.Equal(p.Tools, []string{"Read", "Grep", "Glob"}) || p.WritePaths == nil || len(p.WritePaths) != 0 || p.Network != "deny" {
		t.Errorf("the review's policy %+v: want Read/Grep/Glob, write_paths [], network deny", p)
	}
	assertOffered(t, a.d, []string{"Read", "Grep", "Glob"}, "Write", "Edit", "Bash", "WebFetch")

	// A scope the bridge cannot compute is refused before any job starts.
	for _, tc := range []struct{ scope, want string }{
		{"base:nosuchbranch", "not a commit"},
		{"paths:missing.go", "missing.go"},
	} {
		c := callAgent(t, t.Context(), cs, "deepseek_review", map[string]any{"workspace": ws, "scope": tc.scope}, nil)
		if !c.IsError || !strings.Contains(c.Text, "The review was not started") || !strings.Contains(c.Text, tc.want) {
			t.Errorf("scope %s: IsError %v: %s", tc.scope, c.IsError, c.Text)
		}
	}
}

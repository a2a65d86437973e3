package review

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
)

// scope is a diff scope of two files: loop.go (9 lines, lines 4–6
// changed) and gone.go, deleted.
var scope = changes.Scope{
	Spec: changes.ScopeSpec{Kind: changes.ScopeBase, Ref: "main"},
	Files: []changes.ScopeFile{
		{Path: "loop.go", Change: changes.Modified, Lines: 9, Hunks: []changes.LineRange{{From: 4, To: 6}}},
		{Path: "gone.go", Change: changes.Deleted},
	},
	LeftOut: []string{".env"},
	Diff:    "diff --git a/loop.go b/loop.go\n--- a/loop.go\n+++ b/loop.go\n@@ -4,3 +4,3 @@\n-\tfor i := 0; i < n; i++ {\n+\tfor i := 0; i <= n; i++ {\n",
}

func TestReadKeepsFindingsInTheScope(t *testing.T) {
	answer := "Here is my review.\n\n```json\n" + `{"verdict":"needs_changes","summary":"An off-by-one.","findings":[
 {"title":"off by one","body":"<= reads past the end","priority":0,"confidence":0.95,"file":"loop.go","line_start":5,"line_end":5},
 {"title":"context","body":"the return","priority":3,"confidence":0.4,"file":"/ws/loop.go","line_start":8},
 {"title":"labelled","body":"b/ prefix","priority":9,"confidence":7,"file":"b/loop.go","line_start":4,"line_end":6},
 {"title":"outside","body":"not in scope","priority":1,"confidence":0.9,"file":"main.go","line_start":1,"line_end":2},
 {"title":"past the end","body":"x","priority":1,"confidence":0.9,"file":"loop.go","line_start":12,"line_end":14},
 {"title":"deleted","body":"x","priority":1,"confidence":0.9,"file":"gone.go","line_start":1,"line_end":1},
 {"title":"backwards","body":"x","priority":1,"confidence":0.9,"file":"loop.go","line_start":5,"line_end":2}
]}` + "\n```\n"
	r := Read(answer, scope, "/ws")
	if r.Verdict != VerdictNeedsChanges || r.Summary != "An off-by-one." || r.Error != "" {
		t.Fatalf("result %+v", r)
	}
	if len(r.Findings) != 3 || r.Dropped != 4 || len(r.DroppedWhy) != 4 {
		t.Fatalf("kept %d, dropped %d (%v): want 3 kept, 4 dropped", len(r.Findings), r.Dropped, r.DroppedWhy)
	}
	f := r.Findings[0]
	if f.File != "loop.go" || f.LineStart != 5 || f.LineEnd != 5 || f.Priority != 0 || f.Confidence != 0.95 || f.Context {
		t.Errorf("the off-by-one: %+v", f)
	}
	if c := r.Findings[1]; c.File != "loop.go" || c.LineStart != 8 || c.LineEnd != 8 || !c.Context {
		t.Errorf("a finding outside the hunks is kept as context: %+v", c)
	}
	if l := r.Findings[2]; l.File != "loop.go" || l.Priority != 3 || l.Confidence != 1 || l.Context {
		t.Errorf("a b/-labelled path, its priority and confidence bounded: %+v", l)
	}
	for i, want := range []string{`"main.go" is not a file of the scope`, "beyond its end (9 lines)", "gone.go has no lines", "not a range of lines"} {
		if !strings.Contains(r.DroppedWhy[i], want) {
			t.Errorf("dropped[%d] = %q, want %q", i, r.DroppedWhy[i], want)
		}
	}
}

func TestReadSaysWhenThereIsNoVerdict(t *testing.T) {
	for _, tc := range []struct{ name, answer, verdict, err string }{
		{"prose", "All good, ship it.", VerdictUnclear, "no JSON block"},
		{"a broken block", "```json\n{\"verdict\": \n```", VerdictUnclear, "no JSON block"},
		{"an unknown verdict", "```json\n{\"verdict\":\"lgtm\",\"findings\":[]}\n```", VerdictUnclear, `"lgtm"`},
		{"the last block counts", "```json\n{\"verdict\":\"needs_changes\",\"findings\":[]}\n```\nOn second thought:\n```\n{\"verdict\":\"looks_good\",\"findings\":[]}\n```", VerdictLooksGood, ""},
		{"another language is skipped", "```json\n{\"verdict\":\"looks_good\",\"findings\":[]}\n```\n```go\nfunc x() {}\n```", VerdictLooksGood, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Read(tc.answer, scope, "/ws")
			if r.Verdict != tc.verdict || !strings.Contains(r.Error, tc.err) || (tc.err == "") != (r.Error == "") || r.Findings == nil {
				t.Fatalf("Read = %+v, want verdict %s and error %q", r, tc.verdict, tc.err)
			}
		})
	}
}

func TestPromptHandsTheScopeOver(t *testing.T) {
	p := Prompt(Request{Scope: scope.Spec, Focus: "security", Instructions: "check the bounds", ProjectInstructions: "Use tabs."}, scope)
	for _, want := range []string{"HEAD since its merge base with main", "2 file(s)", "Focus on: security", "do not try to read them): .env",
		"```diff\n" + scope.Diff, "check the bounds", "<project-instructions>\nUse tabs.\n</project-instructions>", `"line_start"`, "you run no commands"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	big := scope
	big.Diff = strings.Repeat("+x\n", MaxPromptDiff)
	if p := Prompt(Request{Scope: big.Spec}, big); len(p) > MaxPromptDiff+8<<10 || !strings.Contains(p, "- loop.go (modified)") {
		t.Errorf("a cut diff: %d bytes, files listed: %v", len(p), strings.Contains(p, "- loop.go (modified)"))
	}
	paths := changes.Scope{Spec: changes.ScopeSpec{Kind: changes.ScopePaths, Paths: []string{"a.go"}}, Files: []changes.ScopeFile{{Path: "a.go", Lines: 3}}}
	if p := Prompt(Request{Scope: paths.Spec}, paths); !strings.Contains(p, "- a.go (3 lines)") || strings.Contains(p, "```diff") {
		t.Errorf("a paths prompt:\n%s", p)
	}
}

func TestPolicyIsReadOnly(t *testing.T) {
	p := Policy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.WritePaths == nil || len(p.WritePaths) != 0 || strings.Join(p.Tools, ",") != "Read,Grep,Glob" || p.Network != "deny" || p.OnOtherCommands != "deny" {
		t.Errorf("policy %+v", p)
	}
}

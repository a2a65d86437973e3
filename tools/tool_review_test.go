package tools

import (
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

func TestReviewStartsAReviewJob(t *testing.T) {
	done := snap(jobs.StatusDone)
	done.Workspace = "/ws"
	done.Result = "One bug.\n```json\n" + `{"verdict":"needs_changes","summary":"off by one","findings":[` +
		`{"title":"<= past the end","body":"use <","priority":0,"confidence":0.9,"file":"loop.go","line_start":5,"line_end":5},` +
		`{"title":"elsewhere","body":"x","priority":1,"confidence":0.5,"file":"other.go","line_start":1,"line_end":1}]}` + "\n```"
	done.Review = &jobs.ReviewState{Scope: changes.Scope{Spec: changes.ScopeSpec{Kind: changes.ScopeBase, Ref: "main"},
		Files: []changes.ScopeFile{{Path: "loop.go", Change: changes.Modified, Lines: 9, Hunks: []changes.LineRange{{From: 4, To: 6}}}}, LeftOut: []string{".env"}}}
	f := &fakeJobs{startSnap: done, waitSnaps: map[string]jobs.Snapshot{jobID: done}}
	_, h := ReviewTool(f, AgentToolOptions{})
	res, text := call(t, h, map[string]any{"workspace": "/ws", "scope": "base:main", "focus": "bounds", "include_project_instructions": true})
	if res.IsError {
		t.Fatalf("IsError: %s", text)
	}
	if len(f.gotStart) != 1 {
		t.Fatalf("%d starts", len(f.gotStart))
	}
	got := f.gotStart[0]
	if got.Review == nil || got.Review.Scope.String() != "base:main" || got.Review.Focus != "bounds" || !got.Review.IncludeProjectInstructions || got.Policy != nil || got.Workspace != "/ws" {
		t.Fatalf("start request %+v (review %+v)", got, got.Review)
	}
	p := payloadOf(t, res)
	r := p.Review
	if r == nil || r.Verdict != "needs_changes" || r.Scope != "base:main" || r.Files != 1 || len(r.Findings) != 1 || r.Dropped != 1 || r.Findings[0].File != "loop.go" {
		t.Fatalf("review payload %+v", r)
	}
	for _, want := range []string{"Review of base:main (1 files): needs_changes — off by one", "[P0, 90%] loop.go:5-5: <= past the end", "1 finding(s) dropped", "Left out of the scope (secret or denied, never read): .env"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}

	for _, tc := range []struct{ scope, want string }{
		{"base:--exec=x", "needs a ref"},
		{"paths:../x", "not a path inside the workspace"},
		{"all", "want uncommitted"},
	} {
		res, text := call(t, h, map[string]any{"workspace": "/ws", "scope": tc.scope})
		if !res.IsError || !strings.Contains(text, "The review was not started") || !strings.Contains(text, tc.want) {
			t.Errorf("scope %q: IsError %v %q", tc.scope, res.IsError, text)
		}
	}
	if len(f.gotStart) != 1 {
		t.Errorf("a refused scope started a job: %d starts", len(f.gotStart))
	}
}

func TestReviewPayloadBeforeTheEnd(t *testing.T) {
	for _, tc := range []struct {
		status jobs.Status
		want   string
	}{{jobs.StatusRunning, "pending"}, {jobs.StatusCancelled, "none"}} {
		s := snap(tc.status)
		s.Review = &jobs.ReviewState{Scope: changes.Scope{Spec: changes.ScopeSpec{Kind: changes.ScopeUncommitted}}}
		p := Payload(s, s.CreatedAt)
		if p.Review == nil || p.Review.Verdict != tc.want || p.Review.Findings == nil {
			t.Errorf("%s: review %+v, want verdict %s", tc.status, p.Review, tc.want)
		}
	}
}

package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// A continue runs in the parent's workspace, resumes its session with its
// session files copied over, records the parent, and can only narrow the
// parent's policy: tools intersect, an allow list must be a subset, and the
// parent's ceilings do not carry over.
func TestContinueResumesAndOnlyNarrows(t *testing.T) {
	e := newEnv(t, nil)
	pol := &policy.Policy{Tools: []string{"Read", "Bash"}, WritePaths: []string{"out/**"}, MaxSteps: 3}
	parent, err := e.r.Start(t.Context(), StartRequest{Task: "first", Workspace: e.ws, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	run := e.nextRun()
	session := filepath.Join(e.dir.HarnessDir(parent.ID), "projects", "-ws", "sess.jsonl")
	if err := os.MkdirAll(filepath.Dir(session), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session, []byte(`{"turn":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run.send(harness.Event{Kind: harness.KindInit, SessionID: "sess"}, evResult("error_max_turns", true, ""))
	run.end(harness.Exit{Code: 1})
	if s := e.settle(parent.ID); !s.CanContinue() {
		t.Fatalf("parent %s session %q: not continuable", s.Status, s.SessionID)
	}

	_, err = e.r.Continue(t.Context(), ContinueRequest{JobID: parent.ID, Task: "go on", Policy: &policy.Policy{WritePaths: []string{"src/**"}}})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `"src/**" is not in it`) {
		t.Fatalf("a wider write_paths: %v", err)
	}
	child, err := e.r.Continue(t.Context(), ContinueRequest{JobID: parent.ID, Task: "go on", MaxSteps: 7, Policy: &policy.Policy{Tools: []string{"Read", "Write"}}})
	if err != nil {
		t.Fatal(err)
	}
	crun := e.nextRun()
	if child.ID == parent.ID || child.Parent != parent.ID || child.ResumeSession != "sess" || child.Workspace != e.ws || child.MaxSteps != 7 {
		t.Errorf("child = id %s parent %s resume %q ws %s max_steps %d", child.ID, child.Parent, child.ResumeSession, child.Workspace, child.MaxSteps)
	}
	if p := child.Policy; !slices.Equal(p.Tools, []string{"Read"}) || !slices.Equal(p.WritePaths, []string{"out/**"}) || p.MaxSteps != 0 {
		t.Errorf("child policy = %+v", p)
	}
	if crun.spec.Resume != "sess" || crun.spec.Task != "go on" {
		t.Errorf("spec resume %q task %q", crun.spec.Resume, crun.spec.Task)
	}
	if b, err := os.ReadFile(filepath.Join(crun.spec.ConfigDir, "projects", "-ws", "sess.jsonl")); err != nil || string(b) != `{"turn":1}`+"\n" {
		t.Errorf("session file in the child's config dir: %q, %v", b, err)
	}
	e.succeed(crun, child.ID)
}

package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With the lock on, a start on the same workspace, one inside it or one
// around it is refused while a job is live there, and the refusal names the
// job; a sibling workspace is not; once the job ends the workspace is free.
func TestWorkspaceLockRefusesOverlap(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.WorkspaceLock = true; o.MaxConcurrent = 4 })
	inner := filepath.Join(e.ws, "sub")
	sibling := filepath.Join(e.root, "other")
	for _, d := range []string{inner, sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first := e.start("first")
	run := e.nextRun()
	for _, ws := range []string{e.ws, inner, e.root} {
		_, err := e.r.Start(t.Context(), StartRequest{Task: "second", Workspace: ws})
		if !errors.Is(err, ErrWorkspaceBusy) || !strings.Contains(err.Error(), first.ID) ||
			!strings.Contains(err.Error(), "deepseek_agent_cancel") || !strings.Contains(err.Error(), "BRIDGE_WORKSPACE_LOCK=off") {
			t.Fatalf("start on %s: %v", ws, err)
		}
	}
	other, err := e.r.Start(t.Context(), StartRequest{Task: "beside", Workspace: sibling})
	if err != nil {
		t.Fatalf("sibling workspace refused: %v", err)
	}
	e.succeed(e.nextRun(), other.ID)
	e.succeed(run, first.ID)
	again, err := e.r.Start(t.Context(), StartRequest{Task: "after", Workspace: e.ws})
	if err != nil {
		t.Fatalf("start after the first ended: %v", err)
	}
	e.succeed(e.nextRun(), again.ID)
}

// With the lock off (BRIDGE_WORKSPACE_LOCK=off) two jobs share a workspace.
func TestWorkspaceLockOffAllowsParallel(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.start("a"), e.start("b")
	ra, rb := e.nextRun(), e.nextRun()
	e.succeed(ra, ra.spec.JobID)
	e.succeed(rb, rb.spec.JobID)
	if a.ID == b.ID {
		t.Fatal("same id")
	}
}

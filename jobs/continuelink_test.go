package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// The parent job's harness dir is read-write inside its jail, so the
// job can replace projects/ with a symlink to any directory the daemon can
// read. A continue must not copy that directory into the child's config dir
// (which the child reads inside its jail).
func TestContinueNeverCopiesWhatAPlantedProjectsLinkPointsAt(t *testing.T) {
	e := newEnv(t, nil)
	parent, err := e.r.Start(t.Context(), StartRequest{Task: "first", Workspace: e.ws})
	if err != nil {
		t.Fatal(err)
	}
	run := e.nextRun()
	outside := t.TempDir() // stands for the owner's ~/.config, the state dir, another job's harness dir
	if err := os.WriteFile(filepath.Join(outside, "secret.env"), []byte("DEEPSEEK_API_KEY=not-a-real-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.dir.HarnessDir(parent.ID), 0o700); err != nil { // Prepare makes it in a real run
		t.Fatal(err)
	}
	// What the jailed parent does: ln -s <outside> $CLAUDE_CONFIG_DIR/projects
	if err := os.Symlink(outside, filepath.Join(e.dir.HarnessDir(parent.ID), "projects")); err != nil {
		t.Fatal(err)
	}
	run.send(harness.Event{Kind: harness.KindInit, SessionID: "sess"}, evResult("success", false, "done"))
	run.end(harness.Exit{Code: 0})
	if s := e.settle(parent.ID); !s.CanContinue() {
		t.Fatalf("parent %s session %q: not continuable", s.Status, s.SessionID)
	}
	child, err := e.r.Continue(t.Context(), ContinueRequest{JobID: parent.ID, Task: "go on"})
	if err != nil {
		t.Fatal(err)
	}
	s := e.settle(child.ID)
	if s.Status != StatusError || !strings.Contains(s.Error, "not a directory") {
		t.Errorf("child %s: %q, want an error that the parent's session dir is not a directory", s.Status, s.Error)
	}
	copied := filepath.Join(e.dir.HarnessDir(child.ID), "projects", "secret.env")
	if b, err := os.ReadFile(copied); err == nil {
		t.Errorf("the daemon copied a file from outside the state dir into the child's config dir (readable in its jail): %s = %q", copied, b)
	}
}

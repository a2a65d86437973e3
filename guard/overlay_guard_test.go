package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
)

// A carried upper dir with a link where a write_paths dir lies is refused:
// bubblewrap would bind what the link leads to, read-write.
func TestCarriedLinkAlongAWriteDirIsRefused(t *testing.T) {
	ws, upper := t.TempDir(), t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(upper, "src")); err != nil {
		t.Fatal(err)
	}
	if err := plainDirsIn(upper, ws, filepath.Join(ws, "src", "gen")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a link along the write dir: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(upper, "out", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := plainDirsIn(upper, ws, filepath.Join(ws, "out", "x", "y")); err != nil {
		t.Errorf("plain dirs: %v", err)
	}
}

// An overlay job's end never reads a runs-later baseline: its harness dir,
// where one would lie, is the job's to write, and a forged one would move
// the owner's files aside.
func TestAuditSkipsOverlayJobs(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	ws := filepath.Join(f.root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("e", 32)
	if _, err := changes.StartOverlay(f.dir.ChangesDir(id), changes.OverlayStart{Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.dir.HarnessDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir.HarnessDir(id), baselineFile), []byte(`{"items":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := f.g.Audit(context.Background(), id, ws)
	if len(res.Quarantined) != 0 {
		t.Errorf("quarantined %+v from a forged baseline", res.Quarantined)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
		t.Errorf("the owner's .git was moved: %v", err)
	}
}

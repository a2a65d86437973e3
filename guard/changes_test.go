package guard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// deny_paths are "never read or written" by the job, and so never read
// for the record of its changes, which its caller reads: a deny path whose
// file changes while the job runs (a service appending to it, the owner
// editing it) is listed by path and size, like a secret file, never copied
// or diffed; so is one created under a deny glob.
func TestDenyPathsAreListedNeverDiffed(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	ws := filepath.Join(f.root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	const canary = "DENY-PATH-CANARY"
	key := filepath.Join(ws, "secrets", "prod.key")
	if err := os.WriteFile(key, []byte(canary+" old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets", "**/*.pem"}}, "")
	id := strings.Repeat("d", 32)
	spec := harness.Spec{JobID: id, Workspace: ws, ConfigDir: f.dir.HarnessDir(id), Policy: &e}
	if err := f.g.Prepare(context.Background(), &spec); err != nil {
		t.Fatal(err)
	}
	// While the job runs, the file changes (not by the job), a file under a
	// deny glob appears, and a file the job may read changes.
	if err := os.WriteFile(key, []byte(canary+" rotated, longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "cert.pem"), []byte(canary+" pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := f.g.Changes(context.Background(), id, ws)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rep.Diff, canary) {
		t.Errorf("a deny path's contents are in the job's diff:\n%s", rep.Diff)
	}
	if !strings.Contains(rep.Diff, "+new") {
		t.Errorf("the diff lacks the change to notes.txt:\n%s", rep.Diff)
	}
	got := map[string]string{}
	for _, c := range rep.Changes {
		if denied := c.Path != "notes.txt"; c.Secret != denied || strings.Contains(c.Note, "deny path") != denied {
			t.Errorf("%s: secret %v, note %q", c.Path, c.Secret, c.Note)
		}
		got[c.Path] = c.Change
	}
	if got["secrets/prod.key"] != "modified" || got["cert.pem"] != "created" {
		t.Errorf("changes %v: want secrets/prod.key modified and cert.pem created, listed", got)
	}
	// Nothing the record kept holds the deny path's contents either.
	dir := f.dir.ChangesDir(id)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s, kept with the job, holds a deny path's contents", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package guard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// TestGuardAdmitWorkspace: the registry's only workspace check.
func TestGuardAdmitWorkspace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	inside := filepath.Join(root, "proj")
	sibling := filepath.Join(base, "ws-evil")
	outside := filepath.Join(base, "elsewhere")
	state := filepath.Join(root, "state")
	for _, d := range []string{inside, sibling, outside, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(base, "link-to-proj")
	if err := os.Symlink(inside, viaLink); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("x"), 0o644)

	tests := []struct {
		name     string
		roots    []string
		state    string
		dir      string
		want     string
		errParts []string
	}{
		{"inside", []string{root}, "", inside, inside, nil},
		{"the root itself", []string{root}, "", root, root, nil},
		{"symlink into the root", []string{root}, "", viaLink, inside, nil},
		{"no roots", nil, "", inside, "", []string{"no allowed roots configured", "bridgectl allow DIR"}},
		{"outside", []string{root}, "", outside, "", []string{"outside every allowed root", root}},
		{"prefix sibling", []string{root}, "", sibling, "", []string{"outside every allowed root"}},
		{"symlink escaping the root", []string{root}, "", escape, "", []string{"through a symlink", outside}},
		{"dot-dot traversal", []string{root}, "", inside + "/../../elsewhere", "", []string{"outside"}},
		{"missing", []string{root}, "", filepath.Join(root, "nope"), "", []string{"does not exist"}},
		{"a file", []string{root}, "", file, "", []string{"not a directory"}},
		{"relative", []string{root}, "", "proj", "", []string{"not an absolute path"}},
		{"empty", []string{root}, "", "", "", []string{"not an absolute path"}},
		{"contains the state dir", []string{root}, state, root, "", []string{"overlaps a protected path", "BRIDGE_STATE_DIR"}},
		{"inside the state dir", []string{root}, root, inside, "", []string{"overlaps a protected path", "BRIDGE_STATE_DIR"}},
		{"missing root admits nothing", []string{filepath.Join(base, "gone")}, "", inside, "", []string{"outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGuardFixture(t, nil, nil)
			f.g.roots = tt.roots
			if tt.state != "" {
				f.g.dir = statedir.Dir{Root: tt.state}
			}
			got, err := f.g.Admit(tt.dir)
			if tt.errParts == nil {
				if err != nil || got != tt.want {
					t.Fatalf("= %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, sandbox.ErrWorkspace) {
				t.Fatalf("admitted %q (%v)", got, err)
			}
			for _, p := range tt.errParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q lacks %q", err, p)
				}
			}
		})
	}
}

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdmitWorkspace(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	roots := []string{fx.ws}
	must(t, os.MkdirAll(filepath.Join(fx.ws, "proj"), 0o755))
	must(t, os.MkdirAll(filepath.Join(fx.ws, "statehere"), 0o700))
	cases := []struct {
		name      string
		roots     []string
		dir       string
		protected []string
		want      string // resolved dir on success
		err       error
		msg       string
	}{
		{"no roots", nil, fx.ws, nil, "", ErrNoRoots, "bridgectl allow DIR"},
		{"blank roots", []string{"", " "}, fx.ws, nil, "", ErrNoRoots, "DEEPSEEK_ALLOWED_ROOTS"},
		{"root itself", roots, fx.ws, nil, fx.ws, nil, ""},
		{"subdir", roots, filepath.Join(fx.ws, "proj"), nil, filepath.Join(fx.ws, "proj"), nil, ""},
		{"via symlinked path", roots, filepath.Join(fx.root, "wslink", "sub"), nil, filepath.Join(fx.ws, "sub"), nil, ""},
		{"root given through a symlink", []string{filepath.Join(fx.root, "wslink")}, filepath.Join(fx.ws, "sub"), nil, filepath.Join(fx.ws, "sub"), nil, ""},
		{"symlink inside the root", roots, filepath.Join(fx.ws, "link-in"), nil, filepath.Join(fx.ws, "sub"), nil, ""},
		{"relative", roots, "ws/sub", nil, "", ErrNotAbsolute, "full path"},
		{"empty", roots, "", nil, "", ErrNotAbsolute, ""},
		{"missing", roots, filepath.Join(fx.ws, "nope"), nil, "", ErrNotFound, "nope"},
		{"a file", roots, filepath.Join(fx.ws, "file.txt"), nil, "", ErrNotDir, "file.txt"},
		{"outside", roots, filepath.Join(fx.root, "outside"), nil, "", ErrOutsideRoots, "bridgectl allow"},
		{"prefix sibling", roots, filepath.Join(fx.root, "ws-evil"), nil, "", ErrOutsideRoots, ""},
		{"dotdot out", roots, fx.ws + "/..", nil, "", ErrOutsideRoots, ""},
		{"escapes through a symlink", roots, filepath.Join(fx.ws, "link-out"), nil, "", ErrSymlinkEscape, "symlink"},
		{"planted link to the state dir", roots, filepath.Join(fx.ws, "state-link"), nil, "", ErrSymlinkEscape, ""},
		{"missing root contains nothing", []string{filepath.Join(fx.root, "gone")}, fx.ws, nil, "", ErrOutsideRoots, ""},
		{"contains the state dir", roots, fx.ws, []string{filepath.Join(fx.ws, "statehere")}, "", ErrProtectedPath, "contains " + filepath.Join(fx.ws, "statehere")},
		{"inside the state dir", []string{fx.root}, fx.state, []string{fx.state}, "", ErrProtectedPath, "lies inside " + fx.state},
		{"contains the .env", []string{fx.root}, fx.root, []string{fx.env}, "", ErrProtectedPath, ".env"},
		{"protected elsewhere is fine", roots, fx.ws, []string{fx.state, fx.env}, fx.ws, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := AdmitWorkspace(c.roots, c.dir, c.protected...)
			if c.err == nil {
				if err != nil || got != c.want {
					t.Fatalf("AdmitWorkspace = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if !errors.Is(err, c.err) || got != "" {
				t.Fatalf("AdmitWorkspace = %q, %v; want error %v", got, err, c.err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture lays out a workspace with every trap REFERENCE.md names:
//
//	root/ws/            the workspace
//	     file.txt sub/a.txt
//	     link-out  -> ../outside        (directory symlink pointing out)
//	     link-file -> ../outside/secret.txt
//	     dangling  -> ../outside/new    (a write would create it outside)
//	     link-in   -> sub               (symlink staying inside)
//	     hard.txt  == ../outside/hard-twin.txt (hard link)
//	     state-link -> ../state         (planted link to the state dir)
//	     chain1 -> chain2 -> link-out   (a chain)
//	     loop1 <-> loop2                (a loop)
//	root/ws-evil/x.txt  (prefix sibling)
//	root/outside/secret.txt hard-twin.txt
//	root/state/decision  root/.env
type fixture struct {
	root, ws, state, env string
}

func newFixture(t testing.TB, dir string) fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fx := fixture{root: root, ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"), env: filepath.Join(root, ".env")}
	for _, d := range []string{"ws/sub", "ws-evil", "outside", "state"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"ws/file.txt", "ws/sub/a.txt", "ws-evil/x.txt", "outside/secret.txt", "outside/hard-twin.txt", "state/decision", ".env"} {
		must(t, os.WriteFile(filepath.Join(root, f), []byte("x"), 0o600))
	}
	links := map[string]string{
		"ws/link-out": "../outside", "ws/link-file": "../outside/secret.txt", "ws/dangling": "../outside/new",
		"ws/link-in": "sub", "ws/state-link": "../state", "ws/chain1": "chain2", "ws/chain2": "link-out",
		"ws/loop1": "loop2", "ws/loop2": "loop1", "wslink": "ws",
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	must(t, os.Link(filepath.Join(root, "outside/hard-twin.txt"), filepath.Join(root, "ws/hard.txt")))
	return fx
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAdmit(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	g := Guard{Workspace: fx.ws, Protected: []string{fx.state, fx.env}}
	ws := fx.ws
	cases := []struct {
		name, path string
		inside     bool
		protected  bool
		reason     string // substring of Reason
		resolved   string // expected Resolved, when set
	}{
		{"empty", "", false, false, "empty path", ""},
		{"dot", ".", true, false, "inside", ws},
		{"dotdot", "..", false, false, "outside the workspace", fx.root},
		{"plain file", "file.txt", true, false, "", filepath.Join(ws, "file.txt")},
		{"dot slash", "./file.txt", true, false, "", filepath.Join(ws, "file.txt")},
		{"dotdot staying inside", "sub/../file.txt", true, false, "", filepath.Join(ws, "file.txt")},
		{"traversal", "../outside/secret.txt", false, false, "outside the workspace", filepath.Join(fx.root, "outside/secret.txt")},
		{"deep traversal", "sub/../../outside/secret.txt", false, false, "outside", ""},
		{"absolute inside", filepath.Join(ws, "sub/a.txt"), true, false, "", filepath.Join(ws, "sub/a.txt")},
		{"absolute workspace", ws, true, false, "", ws},
		{"absolute outside", "/etc/passwd", false, false, "outside", ""},
		{"prefix sibling absolute", fx.root + "/ws-evil/x.txt", false, false, "outside", ""},
		{"prefix sibling relative", "../ws-evil/x.txt", false, false, "outside", ""},
		{"prefix sibling no slash", ws + "-evil", false, false, "outside", ""},
		{"symlinked dir out", "link-out/secret.txt", false, false, "symlink", filepath.Join(fx.root, "outside/secret.txt")},
		{"symlinked dir itself", "link-out", false, false, "symlink", ""},
		{"new file under symlinked dir", "link-out/new.txt", false, false, "symlink", filepath.Join(fx.root, "outside/new.txt")},
		{"new nested file under symlinked dir", "link-out/a/b/new.txt", false, false, "symlink", ""},
		{"file symlink out", "link-file", false, false, "symlink", ""},
		{"dangling symlink out", "dangling", false, false, "symlink", filepath.Join(fx.root, "outside/new")},
		{"symlink chain out", "chain1/secret.txt", false, false, "symlink", ""},
		{"symlink loop", "loop1/x", false, false, "symbolic links", ""},
		{"symlink inside", "link-in/a.txt", true, false, "", filepath.Join(ws, "sub/a.txt")},
		{"dotdot after symlink (kernel walks the target's parent)", "link-out/../outside/secret.txt", false, false, "", ""},
		{"dotdot after symlink back into the workspace", "link-out/../ws/file.txt", true, false, "", ""},
		{"dotdot after symlink lexically inside", "link-out/..", false, false, "", ""},
		{"nonexistent then dotdot", "sub/nope/../a.txt", true, false, "", filepath.Join(ws, "sub/a.txt")},
		{"new file", "new.txt", true, false, "", filepath.Join(ws, "new.txt")},
		{"new nested file", "a/b/c.txt", true, false, "", filepath.Join(ws, "a/b/c.txt")},
		{"file as directory", "file.txt/x", true, false, "", ""},
		{"hard link", "hard.txt", false, false, "hard link", filepath.Join(ws, "hard.txt")},
		{"home", "~/.ssh/id_rsa", false, false, "home", ""},
		{"home bare", "~", false, false, "home", ""},
		{"nul byte", "file\x00.txt", false, false, "NUL", ""},
		{"glob inside", "**/*.go", true, false, "", ws},
		{"glob in sub", "sub/*.txt", true, false, "", filepath.Join(ws, "sub")},
		{"glob absolute inside", ws + "/**/*.txt", true, false, "", ws},
		{"glob question", "fil?.txt", true, false, "", ws},
		{"glob class", "[a-z]*.txt", true, false, "", ws},
		{"glob brace", "*.{go,txt}", true, false, "", ws},
		{"glob parent", "../*", false, false, "..", ""},
		{"glob dotdot deep", "sub/../../*", false, false, "..", ""},
		{"glob dotdot after meta", "*/../../x", false, false, "..", ""},
		{"glob absolute outside", "/etc/*", false, false, "outside", ""},
		{"glob root", "/*", false, false, "outside", ""},
		{"glob through symlink", "link-out/*.txt", false, false, "symlink", ""},
		{"glob prefix sibling", ws + "-evil/*", false, false, "outside", ""},
		{"glob brace absolute", "{/etc/passwd,x}", false, false, "alternative", ""},
		{"glob brace home", "x{,~/.ssh}", false, false, "alternative", ""},
		{"glob dot-star can match dotdot", ".*/secret.txt", false, false, "can match", ""},
		{"glob dot-question can match dotdot", "sub/.?/x", false, false, "can match", ""},
		{"glob dotdot assembled from braces", "{.,x}./outside/*", false, false, "can match", ""},
		{"glob dotdot assembled from nested braces", "{{.,y},x}./*", false, false, "can match", ""},
		{"glob brace alternative through symlink", "{sub,link-out}/*", false, false, "symlink", ""},
		{"glob brace alternatives inside", "{sub,link-in}/*.txt", true, false, "", filepath.Join(ws, "sub")},
		{"glob literal braces", "{}*", true, false, "", ws},
		{"glob too many alternatives", strings.Repeat("{a,b}", 9) + "*", false, false, "too many", ""},
		{"glob dotfile is fine", ".git*", true, false, "", ws},
		{"protected via planted symlink", "state-link/decision", false, true, "protected", filepath.Join(fx.state, "decision")},
		{"protected via planted symlink new file", "state-link/x.decision.json", false, true, "protected", ""},
		{"protected absolute", fx.state + "/decision", false, true, "protected", ""},
		{"protected env", fx.env, false, true, "protected", ""},
		{"protected env relative", "../.env", false, true, "protected", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := g.Admit(c.path)
			if d.Inside != c.inside || d.Protected != c.protected {
				t.Fatalf("Admit(%q) = %+v, want Inside=%v Protected=%v", c.path, d, c.inside, c.protected)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("Admit(%q).Reason = %q, want it to mention %q", c.path, d.Reason, c.reason)
			}
			if c.resolved != "" && d.Resolved != c.resolved {
				t.Errorf("Admit(%q).Resolved = %q, want %q", c.path, d.Resolved, c.resolved)
			}
		})
	}
}

func TestAdmitWorkspaceGivenThroughSymlink(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	g := Guard{Workspace: filepath.Join(fx.root, "wslink")}
	for path, inside := range map[string]bool{
		"file.txt":                           true,
		filepath.Join(fx.ws, "file.txt"):     true,
		fx.root + "/wslink/sub/a.txt":        true,
		"../outside/secret.txt":              false,
		fx.root + "/wslink/../ws-evil/x.txt": false,
	} {
		if d := g.Admit(path); d.Inside != inside {
			t.Errorf("Admit(%q) via symlinked workspace = %+v, want Inside=%v", path, d, inside)
		}
	}
}

func TestAdmitBadWorkspace(t *testing.T) {
	dir := t.TempDir()
	for _, ws := range []string{"", "relative/ws", filepath.Join(dir, "missing")} {
		if d := Admit(ws, "x"); d.Inside {
			t.Errorf("Admit with workspace %q = %+v, want outside", ws, d)
		}
	}
}

// FuzzAdmit checks the property that matters: Admit never says Inside for a
// path the kernel (or a lexical cleaner) resolves outside the workspace, and
// never for a protected path.
func FuzzAdmit(f *testing.F) {
	for _, s := range []string{"", ".", "..", "file.txt", "../outside/secret.txt", "link-out/x", "link-out/..",
		"state-link/decision", "dangling", "sub/../../x", "**/*.go", "../*", "link-in/a.txt", "hard.txt",
		"/etc/passwd", "chain1/secret.txt", "loop1", "a//b/./c", "sub/nope/../../..", "~root", "{/x,y}",
		"{.,x}./*", ".*/x", "{sub,link-out}/*", "link-in/../../outside"} {
		f.Add(s)
	}
	fx := newFixture(f, f.TempDir())
	g := Guard{Workspace: fx.ws, Protected: []string{fx.state, fx.env}}
	f.Fuzz(func(t *testing.T, p string) {
		d := g.Admit(p)
		if !d.Inside {
			return
		}
		if d.Protected {
			t.Fatalf("Admit(%q) inside and protected: %+v", p, d)
		}
		if !within(d.Resolved, fx.ws) {
			t.Fatalf("Admit(%q) inside but Resolved %q is outside %s", p, d.Resolved, fx.ws)
		}
		var raws []string
		if strings.ContainsAny(p, globMeta) {
			alts, _ := expandBraces(p, maxBraceAlternatives)
			for _, alt := range alts {
				if filepath.IsAbs(alt) {
					raws = append(raws, globPrefix(alt))
				} else {
					raws = append(raws, fx.ws+"/"+globPrefix(alt))
				}
			}
		} else if filepath.IsAbs(p) {
			raws = append(raws, p)
		} else {
			raws = append(raws, fx.ws+"/"+p)
		}
		for _, raw := range raws {
			checkInside(t, fx, p, raw)
		}
	})
}

func checkInside(t *testing.T, fx fixture, p, raw string) {
	t.Helper()
	{
		// The kernel's reading (Go's EvalSymlinks walks ".." after a symlink
		// the way the kernel does) and a lexical cleaner's reading.
		for _, cand := range []string{raw, filepath.Clean(raw)} {
			if real, err := filepath.EvalSymlinks(cand); err == nil {
				if !within(real, fx.ws) {
					t.Fatalf("Admit(%q) inside, but %s resolves to %s", p, cand, real)
				}
				for _, prot := range []string{fx.state, fx.env} {
					if within(real, prot) {
						t.Fatalf("Admit(%q) inside, but %s resolves into protected %s", p, cand, real)
					}
				}
			}
		}
		if !within(filepath.Clean(raw), fx.ws) {
			t.Fatalf("Admit(%q) inside, but it cleans to %s", p, filepath.Clean(raw))
		}
	}
}

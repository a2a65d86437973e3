package harness

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pathTree builds, under a fresh temp dir, an allowed root with a
// virtualenv's bin, a directory outside it and links between the two, and
// returns the temp dir (symlinks resolved).
func pathTree(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"root/.venv/bin", "outside/bin", "root-evil/bin"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"linkin":     filepath.Join(base, "root/.venv/bin"), // outside, into the root
		"root/tools": filepath.Join(base, "outside/bin"),    // in the root, out of it
		"linkroot":   filepath.Join(base, "root"),
		"chain":      filepath.Join(base, "root/hop"), // outside → a link in the root → outside
		"root/hop":   filepath.Join(base, "outside/bin"),
		"relin":      "root/.venv", // relative target
		"root/loopa": "loopb",
		"root/loopb": "loopa",
		"rootlink":   filepath.Join(base, "root"),
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func TestTrustedPath(t *testing.T) {
	base := pathTree(t)
	p := func(rel string) string { return filepath.Join(base, rel) }
	list := func(entries ...string) string { return strings.Join(entries, string(filepath.ListSeparator)) }
	root := p("root")
	for _, tc := range []struct {
		name      string
		path      string
		untrusted []string
		kept      string
		dropped   []DroppedEntry
	}{
		{
			name: "a virtualenv in the root goes, system dirs stay",
			path: list(p("root/.venv/bin"), "/usr/bin", "/bin"), untrusted: []string{root},
			kept: list("/usr/bin", "/bin"), dropped: []DroppedEntry{{Entry: p("root/.venv/bin"), Untrusted: root}},
		},
		{
			name: "the root itself, and an unclean spelling of a dir in it",
			path: list(root, p("root/./x/../.venv/bin/"), "/usr/bin"), untrusted: []string{root + "/"},
			kept:    "/usr/bin",
			dropped: []DroppedEntry{{Entry: root, Untrusted: root + "/"}, {Entry: p("root/./x/../.venv/bin/"), Untrusted: root + "/"}},
		},
		{
			name: "empty and relative entries go",
			path: list("", ".", "bin", "/usr/bin", ""), untrusted: nil,
			kept: "/usr/bin", dropped: []DroppedEntry{{Entry: ""}, {Entry: "."}, {Entry: "bin"}, {Entry: ""}},
		},
		{
			name: "a link from outside into the root goes",
			path: list(p("linkin"), p("outside/bin")), untrusted: []string{root},
			kept: p("outside/bin"), dropped: []DroppedEntry{{Entry: p("linkin"), Untrusted: root, Via: p("root/.venv/bin")}},
		},
		{
			name: "a link in the root that points out goes (a job can re-point it)",
			path: list(p("root/tools"), "/usr/bin"), untrusted: []string{root},
			kept: "/usr/bin", dropped: []DroppedEntry{{Entry: p("root/tools"), Untrusted: root}},
		},
		{
			name: "a path through a link that lives in the root goes",
			path: list(p("chain"), "/usr/bin"), untrusted: []string{root},
			kept: "/usr/bin", dropped: []DroppedEntry{{Entry: p("chain"), Untrusted: root, Via: p("root/hop")}},
		},
		{
			name: "a relative link target is followed",
			path: list(p("relin/bin"), "/usr/bin"), untrusted: []string{root},
			kept: "/usr/bin", dropped: []DroppedEntry{{Entry: p("relin/bin"), Untrusted: root, Via: p("root/.venv/bin")}},
		},
		{
			name: "missing: kept outside, dropped inside and under a link into the root",
			path: list(p("outside/later/bin"), p("root/later/bin"), p("linkroot/later/bin")), untrusted: []string{root},
			kept: p("outside/later/bin"),
			dropped: []DroppedEntry{
				{Entry: p("root/later/bin"), Untrusted: root},
				{Entry: p("linkroot/later/bin"), Untrusted: root, Via: p("root/later/bin")},
			},
		},
		{
			name: "a sibling with the root's name as prefix stays",
			path: list(p("root-evil/bin")), untrusted: []string{root},
			kept: p("root-evil/bin"),
		},
		{
			name: "an untrusted dir given as a link covers its target",
			path: list(p("root/.venv/bin"), p("outside/bin")), untrusted: []string{p("rootlink")},
			kept: p("outside/bin"), dropped: []DroppedEntry{{Entry: p("root/.venv/bin"), Untrusted: p("rootlink")}},
		},
		{
			name: "a loop of links in the root ends and goes",
			path: list(p("root/loopa/bin"), "/usr/bin"), untrusted: []string{root},
			kept: "/usr/bin", dropped: []DroppedEntry{{Entry: p("root/loopa/bin"), Untrusted: root}},
		},
		{
			name: "several untrusted dirs; the first that holds an entry is named",
			path: list(p("root/.venv/bin"), "/tmp/x", p("outside/bin")), untrusted: []string{"", root, base, "/tmp"},
			kept: DefaultPath,
			dropped: []DroppedEntry{
				{Entry: p("root/.venv/bin"), Untrusted: root}, {Entry: "/tmp/x", Untrusted: "/tmp"}, {Entry: p("outside/bin"), Untrusted: base},
			},
		},
		{name: "no PATH at all", path: "", kept: DefaultPath, dropped: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, dropped := TrustedPath(tc.path, tc.untrusted)
			if kept != tc.kept {
				t.Errorf("kept %q, want %q", kept, tc.kept)
			}
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("dropped %+v\nwant    %+v", dropped, tc.dropped)
			}
		})
	}
}

// The harness's PATH holds nothing a job can write: not the workspace, not
// an allowed root (the owner's virtualenv), the state dir or /tmp — only
// what lies outside them. Without UntrustedDirs only the workspace and the
// relative entries go.
func TestEnvPathHoldsNothingAJobCanWrite(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	ws := filepath.Join(root, "proj")
	for _, d := range []string{filepath.Join(root, ".venv", "bin"), filepath.Join(state, "bin"), filepath.Join(ws, "bin")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	daemonPath := strings.Join([]string{filepath.Join(root, ".venv", "bin"), "/tmp/x", filepath.Join(state, "bin"),
		filepath.Join(ws, "bin"), "bin", "", "/usr/bin"}, ":")
	spec := Spec{JobID: "j1", Workspace: ws, ConfigDir: filepath.Join(state, "harness", "j1"), BaseURL: "http://127.0.0.1:1", Token: "per-job-token", Model: "deepseek-flash"}
	for _, tc := range []struct {
		untrusted []string
		environ   []string
		want      string
	}{
		{[]string{root, state, "/tmp"}, []string{"LANG=C", "PATH=" + daemonPath}, "/usr/bin"},
		{nil, []string{"LANG=C", "PATH=" + daemonPath}, strings.Join([]string{filepath.Join(root, ".venv", "bin"), "/tmp/x", filepath.Join(state, "bin"), "/usr/bin"}, ":")},
		// A second PATH in the daemon's environment (a parent can pass one)
		// would be what exec hands on: it goes.
		{[]string{root}, []string{"PATH=/usr/bin", "LANG=C", "PATH=" + filepath.Join(root, ".venv", "bin")}, "/usr/bin"},
	} {
		c := &ClaudeCode{Environ: tc.environ, UntrustedDirs: tc.untrusted}
		var paths []string
		for _, kv := range c.Env(spec) {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				paths = append(paths, v)
			}
		}
		if len(paths) != 1 || paths[0] != tc.want {
			t.Errorf("untrusted %q: harness PATH %q, want [%q]", tc.untrusted, paths, tc.want)
		}
	}
}

func TestLookTrusted(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel string, mode os.FileMode) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("rel/bwrap", 0o755)                                                       // relative entry: never used
	write("noexec/bwrap", 0o644)                                                    // not executable: skipped
	if err := os.MkdirAll(filepath.Join(base, "dir", "bwrap"), 0o700); err != nil { // a directory: skipped
		t.Fatal(err)
	}
	good := write("good/bwrap", 0o755)
	t.Chdir(base)
	path := strings.Join([]string{"rel", "", filepath.Join(base, "noexec"), filepath.Join(base, "dir"), filepath.Join(base, "good")}, ":")

	if got, err := LookTrusted("bwrap", path); err != nil || got != good {
		t.Errorf("LookTrusted(bwrap) = %q, %v; want %q", got, err, good)
	}
	if got, err := LookTrusted("bwrap", "rel:"); !errors.Is(err, exec.ErrNotFound) || got != "" {
		t.Errorf("only a relative entry holds it: %q, %v; want ErrNotFound", got, err)
	}
	if got, err := LookTrusted("socat", path); !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "socat") {
		t.Errorf("LookTrusted(socat) = %q, %v", got, err)
	}
	if got, err := LookTrusted(good, ""); err != nil || got != good {
		t.Errorf("an absolute name: %q, %v", got, err)
	}
	if got, err := LookTrusted("rel/bwrap", path); !errors.Is(err, exec.ErrDot) || got != "" {
		t.Errorf("a relative name with a separator: %q, %v; want ErrDot", got, err)
	}
}

// TrustedLook finds nothing when every entry of PATH is one a job could
// write: it never falls back to DefaultPath, so a planted program is not
// found and neither is a system one the owner did not put on PATH.
func TestTrustedLookHasNoFallback(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "venv", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := TrustedLook(bin, []string{root})("sh"); err == nil {
		t.Fatalf("found %s on a PATH whose only entry lies in an allowed root", p)
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		p, err := TrustedLook(bin+string(filepath.ListSeparator)+"/bin", []string{root})("sh")
		if err != nil || p != "/bin/sh" {
			t.Fatalf("TrustedLook = %q, %v; want /bin/sh past the dropped entry", p, err)
		}
	}
}

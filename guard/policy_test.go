package guard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// The jail binds a write_paths dir read-write only when its path holds no
// symlink (a bind would follow one out of the workspace); a missing dir is
// made.
func TestWritableDirs(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	got := writableDirs(ws, []string{"out", "a/b", "link", "link/sub", "../up"})
	want := []string{filepath.Join(ws, "out"), filepath.Join(ws, "a", "b")}
	if !slices.Equal(got, want) {
		t.Errorf("writableDirs = %v, want %v", got, want)
	}
	if st, err := os.Stat(filepath.Join(ws, "a", "b")); err != nil || !st.IsDir() {
		t.Errorf("a missing write_paths dir was not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); err == nil {
		t.Error("a dir was made through a symlink, outside the workspace")
	}
}

// A deny_paths glob names no file a search from above it names, so at the
// job's start the glob is expanded, over the files the secret walk lists,
// into literal paths: hidden from Claude Code's file tools by deny rules
// (a matching dir with everything below it) and from commands by the OS
// sandbox. A file no glob matches stays readable.
func TestDenyPathGlobsAreHiddenAsLiteralPaths(t *testing.T) {
	f := newGuardFixture(t, nil, nil)
	ws := f.workspace(t)
	for _, rel := range []string{"secrets/key.txt", "secrets/sub/deep.txt", "a.pem", "src/b.pem", "src/ok.go"} {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := policy.Merge(policy.Policy{}, policy.Policy{DenyPaths: []string{"secrets/**", "**/*.pem"}}, "")
	spec := harness.Spec{JobID: "0123456789abcdef0123456789abcdef", Workspace: ws, ConfigDir: f.dir.HarnessDir("0123456789abcdef0123456789abcdef"), Policy: &e}
	if err := f.g.Prepare(t.Context(), &spec); err != nil {
		t.Fatal(err)
	}
	st := readJSONFile(t, filepath.Join(f.dir.HarnessDir(spec.JobID), "settings.json"))
	deny := strs(st["permissions"].(map[string]any)["deny"])
	denyRead := strs(st["sandbox"].(map[string]any)["filesystem"].(map[string]any)["denyRead"])
	rule := func(rel string) string { return "Read(/" + filepath.Join(ws, rel) + ")" }
	for _, want := range []string{rule("secrets"), rule("secrets/**"), rule("a.pem"), rule("src/b.pem")} {
		if !slices.Contains(deny, want) {
			t.Errorf("permissions.deny lacks %s: %v", want, deny)
		}
	}
	for _, rel := range []string{"secrets", "a.pem", "src/b.pem"} {
		if !slices.Contains(denyRead, filepath.Join(ws, rel)) {
			t.Errorf("sandbox denyRead lacks %s: %v", rel, denyRead)
		}
	}
	for _, r := range append(deny, denyRead...) {
		if strings.Contains(r, "ok.go") || strings.Contains(r, "/src)") || strings.HasSuffix(r, "/src") {
			t.Errorf("%s is hidden, though no deny_paths glob matches it", r)
		}
	}
}

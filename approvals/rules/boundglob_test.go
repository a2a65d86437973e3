package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBoundedGlobMatchesAsFilepathGlob: within its budget the bounded glob
// finds what filepath.Glob finds, in the same order.
func TestBoundedGlobMatchesAsFilepathGlob(t *testing.T) {
	w := newWorld(t)
	for _, d := range []string{"ws/src/deep/er", "ws/b"} {
		mustDo(t, os.MkdirAll(filepath.Join(w.root, d), 0o755))
	}
	for _, f := range []string{"ws/src/deep/x.go", "ws/src/deep/er/y.go", "ws/b/z.txt", "ws/b/[q].txt"} {
		mustDo(t, os.WriteFile(filepath.Join(w.root, f), nil, 0o600))
	}
	for _, p := range []string{"*", "*/*", "*/*/*.go", "src/*/*", "src/deep/er/y.go", "nothing/*", "b/\\[q\\].txt", "b/[a-z].txt", "*/*/*/*", "ws[", "out-link/*"} {
		pat := filepath.Join(w.ws, p)
		want, wantErr := filepath.Glob(pat)
		got, err := newGlobBudget().glob(pat)
		if !slices.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("%s: glob %v, %v; filepath.Glob %v, %v", p, got, err, want, wantErr)
		}
	}
}

// TestAGlobThroughLinkLoopsStopsAtTheBound: a pattern through directories
// linked to themselves matches 10^7 names here; filepath.Glob lists every
// one of them before any cap on the matches could apply. The bounded glob
// stops once it has read about maxGlobWork names.
func TestAGlobThroughLinkLoopsStopsAtTheBound(t *testing.T) {
	ws := t.TempDir()
	for i := range 10 {
		mustDo(t, os.Symlink(".", filepath.Join(ws, fmt.Sprintf("l%d", i))))
	}
	b := newGlobBudget()
	_, err := b.glob(filepath.Join(ws, strings.Repeat("*/", 6)+"*"))
	if !errors.Is(err, errGlobWork) {
		t.Fatalf("err = %v, want errGlobWork", err)
	}
	if spent := maxGlobWork - b.left; spent > maxGlobWork+1024 {
		t.Errorf("spent %d, past the budget %d by more than one read", spent, maxGlobWork)
	}
	v := ClassifyCommand("ls "+strings.Repeat("*/", 6)+"*", Policy{Workspace: ws, Allow: []string{"ls"}})
	if v.Decision != Deny || !strings.Contains(v.Reason, "more files than the rules check") {
		t.Errorf("verdict %+v, want it refused because of the bound", v)
	}
}

// TestAllTheGlobsOfACommandAreBounded: each glob word stays under the cap on
// one argument's matches, but together a command's words make the daemon
// read the workspace thousands of times (64 KiB of `*/*` cost it minutes). One
// budget holds for the whole call: past it, the command is refused (a
// protected path among the unchecked matches must not reach a person as if
// checked).
func TestAllTheGlobsOfACommandAreBounded(t *testing.T) {
	w := newWorld(t)
	for i := range 300 {
		mustDo(t, os.WriteFile(filepath.Join(w.ws, fmt.Sprintf("f%03d", i)), nil, 0o600))
	}
	few := "ls " + strings.TrimSpace(strings.Repeat("f0* ", 10))
	if v := ClassifyCommand(few, w.policy); v.Decision != Allow {
		t.Fatalf("%s: %+v, want allowed", few, v)
	}
	many := "ls " + strings.TrimSpace(strings.Repeat("f* ", 200))
	v := ClassifyCommand(many, w.policy)
	if v.Decision != Deny || !strings.Contains(v.Reason, "more files than the rules check") {
		t.Errorf("200 globs of 300 files: %+v, want it refused because of the bound", v)
	}
	if v := Classify(Request{Tool: "Bash", Input: map[string]any{"command": many}}, w.policy); v.Decision != Deny {
		t.Errorf("as a Bash call: %+v, want deny", v)
	}
	if v := ClassifyCommand(many+" state-link/approvals/x.request.json", w.policy); v.Decision != Deny {
		t.Errorf("with a protected path after the globs: %+v, want deny", v)
	}
	// what a command writes is checked within the same budget, and past it
	// the command is refused rather than checked in part
	if v := ClassifyCommand("cp main.go "+strings.TrimSpace(strings.Repeat("* ", 200))+" src/", w.policy); v.Decision != Deny || !strings.Contains(v.Reason, "name fewer") {
		t.Errorf("cp into many globs: %+v, want denied for the bound", v)
	}
}

// TestPathArgumentsAreBoundedBeforeTheyAreRead: a file tool's path longer
// than PATH_MAX names no file; it is refused before the rules read it (a 16
// MiB Grep glob of braces cost the daemon seconds, and its reason quoted it).
func TestPathArgumentsAreBoundedBeforeTheyAreRead(t *testing.T) {
	w := newWorld(t)
	long := strings.Repeat("{a,b}", MaxPathBytes/5+1)
	for _, req := range []Request{
		{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, long)}},
		{Tool: "Grep", Input: map[string]any{"pattern": "x", "glob": long}},
		{Tool: "Glob", Input: map[string]any{"pattern": long}},
		{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(w.ws, long), "content": "x"}},
	} {
		v := Classify(req, w.policy)
		if v.Decision != Deny || !strings.Contains(v.Reason, "longer than any path") {
			t.Errorf("%s: %+v, want denied unread", req.Tool, v)
		}
		if len(v.Reason) > 512 || len(v.Summary) > 512 {
			t.Errorf("%s: reason %d and summary %d bytes, want both short", req.Tool, len(v.Reason), len(v.Summary))
		}
	}
	if v := Classify(Request{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(w.ws, "main.go")}}, w.policy); v.Decision != Allow {
		t.Errorf("a plain read: %+v", v)
	}
}

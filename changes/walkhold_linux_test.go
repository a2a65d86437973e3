package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// fullRecord takes the start record of a job without an overlay, as the
// guard does: every folder entered, every file hashed.
func fullRecord(t *testing.T, ws string) string {
	t.Helper()
	scan, err := sandbox.WorkspaceRecordScan(ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "changes")
	if _, err := Start(ws, scan, dir, Options{Git: testGit, Full: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Without an overlay the record still compares by content (a same-size edit
// with its mtime put back), enters every folder (node_modules, venvs,
// caches), lists every change in record.json, and holds back by property:
// the job's version moves out of the workspace, a modified file's earlier
// contents come back, and --promote puts the job's version in place.
func TestWalkRecordComparesByContentAndHolds(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "Makefile", "test:\n\t@echo owner tests pass\n")
	write(t, ws, "node_modules/left-pad/index.js", "module.exports = 1\n")
	write(t, ws, "calc.py", "x = 1\n")
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"Makefile", "node_modules/left-pad/index.js", "calc.py"} {
		if err := os.Chtimes(filepath.Join(ws, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	dir := fullRecord(t, ws)

	// The job, straight in the workspace.
	write(t, ws, "Makefile", "test:\n\t@./run.sh # tests pass\n")
	write(t, ws, "node_modules/left-pad/index.js", "require('x')\n")
	write(t, ws, "__pycache__/calc.cpython-311.pyc", "\x00bytecode")
	write(t, ws, ".envrc", "export X=1\n")
	for i := range MaxChanges + 1 {
		write(t, ws, fmt.Sprintf("Fixtures/f%04d.txt", i), "x\n")
	}
	for _, p := range []string{"Makefile", "node_modules/left-pad/index.js"} {
		if err := os.Chtimes(filepath.Join(ws, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Compare(context.Background(), ws, dir, testGit)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Exact || rep.Record == "" || rep.Incomplete {
		t.Fatalf("exact %v, record %q, incomplete %v; note %q", rep.Exact, rep.Record, rep.Incomplete, rep.Note)
	}
	r, err := LoadOverlayRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]Change{}
	for _, c := range r.Changes {
		st[c.Path] = c
	}
	if len(r.Changes) != MaxChanges+5 {
		t.Errorf("record.json has %d changes, want %d", len(r.Changes), MaxChanges+5)
	}
	if c := st["Makefile"]; c.Change != Modified || c.Status != StatusLanded {
		t.Errorf("the same-size Makefile edit with its mtime back: %+v", c)
	}
	diff, _ := os.ReadFile(filepath.Join(dir, DiffFile))
	if !strings.Contains(string(diff), "+\t@./run.sh # tests pass") {
		t.Errorf("the diff lacks the Makefile edit")
	}
	for _, p := range []string{"node_modules/left-pad/index.js", "__pycache__/calc.cpython-311.pyc", ".envrc"} {
		if c := st[p]; c.Status != StatusHeld || c.Held == "" {
			t.Errorf("%s: %+v, want held", p, c)
		}
	}
	if s, _ := readWS(t, ws, "node_modules/left-pad/index.js"); s != "module.exports = 1\n" {
		t.Errorf("the held node_modules file was not put back: %q", s)
	}
	for _, p := range []string{"__pycache__/calc.cpython-311.pyc", ".envrc"} {
		if _, ok := readWS(t, ws, p); ok {
			t.Errorf("held %s is still in the workspace", p)
		}
	}
	if !strings.Contains(rep.Note, "more changes are not listed here") || !strings.Contains(rep.Note, "record.json") {
		t.Errorf("note %q does not name the record", rep.Note)
	}
	if _, err := Promote(ws, dir, []string{"node_modules"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := readWS(t, ws, "node_modules/left-pad/index.js"); s != "require('x')\n" {
		t.Errorf("after --promote: %q", s)
	}
}

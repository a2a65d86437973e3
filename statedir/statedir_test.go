package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenTightensModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Root, d.Jobs(), d.Approvals(), d.HarnessRoot()} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("%s mode = %o, want 700", p, got)
		}
	}
	if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "BRIDGE_STATE_DIR") {
		t.Errorf("Open(\"\") = %v, want an error naming BRIDGE_STATE_DIR", err)
	}
}

func TestWriteJSONAtomicAndPrivate(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := d.JobFile("abc")
	type rec struct{ N int }
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = WriteJSON(path, rec{N: i}) }()
	}
	wg.Wait()
	var got rec
	if err := ReadJSON(path, &got); err != nil {
		t.Fatalf("after concurrent writes the file is not whole JSON: %v", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %o, want 600", fi.Mode().Perm())
	}
	left, _ := filepath.Glob(filepath.Join(d.Jobs(), ".*tmp"))
	if len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

func TestAppendLine(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{`{"a":1}`, "{\"b\":2}\n"} {
		if err := AppendLine(d.AuditLog(), []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(d.AuditLog())
	if string(b) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("audit log = %q", b)
	}
	fi, _ := os.Stat(d.AuditLog())
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %o, want 600", fi.Mode().Perm())
	}
}

package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestAtTouchesNothing: At names a state dir without creating or changing
// it, for readers; Exists tells whether it is there.
func TestAtTouchesNothing(t *testing.T) {
	base := t.TempDir()
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, root string
		exists     bool
	}{
		{"missing", filepath.Join(base, "never", "state"), false},
		{"existing, mode left as it is", loose, true},
		{"a file is not a state dir", file, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := At(tt.root)
			if err != nil {
				t.Fatal(err)
			}
			if d.Root != tt.root || d.Exists() != tt.exists {
				t.Errorf("At(%s) = %+v, Exists %v; want Root %s, Exists %v", tt.root, d, d.Exists(), tt.root, tt.exists)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(base, "never")); !os.IsNotExist(err) {
		t.Errorf("At created %s (stat: %v)", filepath.Join(base, "never"), err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o755 {
		t.Errorf("At changed the mode of %s to %o", loose, fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(loose); len(ents) != 0 {
		t.Errorf("At created %d entries in %s", len(ents), loose)
	}
	t.Chdir(base)
	if d, err := At("rel"); err != nil || d.Root != filepath.Join(base, "rel") {
		t.Errorf("At(rel) = %+v, %v; want the absolute path", d, err)
	}
	if _, err := At(""); err == nil || !strings.Contains(err.Error(), "BRIDGE_STATE_DIR") {
		t.Errorf("At(\"\") = %v, want an error naming BRIDGE_STATE_DIR", err)
	}
}

func TestEachLineCutsAnOverlongLineAndGoesOn(t *testing.T) {
	in := "one\n" + strings.Repeat("x", 100) + "\nthree"
	var got []string
	tail, whole, err := EachLine(strings.NewReader(in), 10, func(line []byte, whole bool) {
		got = append(got, fmt.Sprintf("%s:%v", line, whole))
	})
	want := []string{"one:true", "xxxxxxxxxx:false"}
	if err != nil || !slices.Equal(got, want) || string(tail) != "three" || !whole {
		t.Fatalf("EachLine: %v %q, tail %q %v; want %q and the tail three", err, got, tail, whole, want)
	}
}

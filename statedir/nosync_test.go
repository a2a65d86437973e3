package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicNoSync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	for _, body := range []string{"{\"a\":1}\n", "{\"a\":2}\n"} { // create, then replace
		if err := WriteFileAtomicNoSync(path, []byte(body)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != body {
			t.Fatalf("read %q %v, want %q", b, err, body)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %o", fi.Mode().Perm())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
	if err := WriteFileAtomicNoSync(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("write into a missing dir succeeded")
	}
}

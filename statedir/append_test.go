package statedir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/fulldisk"
)

// On a full disk a record that no longer fits is not written at all: the
// part that did fit is cut back off, so the log never ends in a torn line.
func TestAppendLineOnAFullDiskIsWholeOrNothing(t *testing.T) {
	fs := fulldisk.Mount(t, 64<<10)
	path := filepath.Join(fs.Dir, "audit.log")
	first := `{"event":"request"}`
	if err := AppendLine(path, []byte(first)); err != nil {
		t.Fatal(err)
	}
	fs.Fill()
	// Longer than what is left of the file's last page: the kernel takes
	// part of it, then refuses the rest.
	long := `{"event":"auto","summary":"` + strings.Repeat("x", 6000) + `"}`
	err := AppendLine(path, []byte(long))
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("append on a full disk = %v, want ENOSPC", err)
	}
	if b, _ := os.ReadFile(path); string(b) != first+"\n" {
		t.Fatalf("after the failed append the log holds %d bytes, want only the first record:\n%.200q", len(b), b)
	}
	fs.Free()
	if err := AppendLine(path, []byte(long)); err != nil {
		t.Fatalf("append once space is back: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != first+"\n"+long+"\n" {
		t.Fatalf("log = %.200q", b)
	}
}

// A line an older writer left unterminated is ended, so the new record is
// a line of its own and reads back whole.
func TestAppendLineEndsATornLineFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(`{"event":"req`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AppendLine(path, []byte(`{"event":"auto"}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"event\":\"req\n{\"event\":\"auto\"}\n" {
		t.Fatalf("log = %q", b)
	}
}

// Concurrent appenders (the approval children of several jobs, bridgectl)
// each land a whole line.
func TestAppendLineConcurrentLinesStayWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := bytes.Repeat([]byte{byte('a' + i)}, 8000)
			if err := AppendLine(path, line); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 16 {
		t.Fatalf("%d lines, want 16", len(lines))
	}
	for _, l := range lines {
		if len(l) != 8000 || strings.Trim(l, l[:1]) != "" {
			t.Fatalf("a line is torn or mixed: %d bytes, starts %.20q", len(l), l)
		}
	}
}

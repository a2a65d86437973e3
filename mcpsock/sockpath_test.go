package mcpsock

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A state dir deep enough that its socket path overflows sun_path still
// gets its socket on Linux (bound through the directory's descriptor), mode
// 0600; Dial reaches it; Close removes it and nothing else.
func TestListenLongPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("long socket paths are bound through /proc/self/fd")
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "daemon.sock")
	if len(path) <= maxSocketPath {
		t.Fatalf("path %d bytes: not long enough to test", len(path))
	}
	if err := os.WriteFile(path, []byte("a dead daemon's socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != path {
		t.Errorf("Addr = %s, want %s", ln.Addr(), path)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v (%v), want a socket with mode 0600", fi.Mode(), err)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := Dial(t.Context(), path)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close: %v, want the socket gone", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("dir after Close holds %v", ents)
	}
}

// Package fulldisk gives a test a small tmpfs it can fill and free, to prove
// what the bridge does when its state dir runs out of space. It needs Linux
// and the right to mount (root); elsewhere the test is skipped, saying why.
package fulldisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// FS is a mounted tmpfs; it is unmounted when the test ends.
type FS struct {
	Dir  string
	t    testing.TB
	size int
	keep func() // stops KeepFull's filler; nil when none runs
}

// Mount mounts a tmpfs of size bytes (rounded up to pages) on a new
// directory and unmounts it in t.Cleanup, before the directory is removed.
func Mount(t testing.TB, size int) *FS {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mount(dir, size); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs Linux and root): %v", err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return &FS{Dir: dir, t: t, size: size}
}

func (f *FS) fillFile() string { return filepath.Join(f.Dir, ".fill") }

// Fill writes a file until the tmpfs has no page left. Files that end inside
// a page can still grow to its end; a new file, or a write past that, fails
// with ENOSPC.
func (f *FS) Fill() {
	f.t.Helper()
	fh, err := os.OpenFile(f.fillFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatalf("fill: %v", err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	for {
		_, err := fh.Write(chunk)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			f.t.Fatalf("fill: %v", err)
		}
	}
}

// ReadOnly remounts the tmpfs read-only (ro true) or writable again: every
// write fails with EROFS meanwhile, whatever room a file's last page has.
func (f *FS) ReadOnly(ro bool) {
	f.t.Helper()
	if err := remount(f.Dir, f.size, ro); err != nil {
		f.t.Fatalf("remount ro=%v: %v", ro, err)
	}
}

// KeepFull fills the tmpfs and keeps it full until Free: a page another
// writer frees (a program deleting its temp files) is taken again within a
// millisecond or so, so writes that need a new page keep failing.
func (f *FS) KeepFull() {
	f.t.Helper()
	f.Fill()
	fh, err := os.OpenFile(f.fillFile(), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatalf("keep full: %v", err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // owner: f; joined by Free or the test's cleanup
		defer close(done)
		defer fh.Close()
		page := make([]byte, os.Getpagesize())
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for {
				if _, err := fh.Write(page); err != nil {
					break
				}
			}
		}
	}()
	f.keep = func() { close(stop); <-done }
	f.t.Cleanup(f.stopKeeping)
}

func (f *FS) stopKeeping() {
	if f.keep != nil {
		f.keep()
		f.keep = nil
	}
}

// Free stops KeepFull and removes what Fill wrote.
func (f *FS) Free() {
	f.t.Helper()
	f.stopKeeping()
	if err := os.Remove(f.fillFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.t.Fatalf("free: %v", err)
	}
}

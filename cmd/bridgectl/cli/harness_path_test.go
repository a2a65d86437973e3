package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A claude a job could have planted in a PATH dir inside an allowed root is
// never the harness bridgectl finds (and doctor runs): the lookup skips the
// dirs no job may write, as the daemon's does.
func TestLocateHarnessSkipsPathDirsInRoots(t *testing.T) {
	root := t.TempDir()
	venv := filepath.Join(root, "proj", ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(venv, "claude")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\ntouch "+filepath.Join(root, "ran")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &ctl{e: &Env{Environ: []string{"PATH=" + venv}, Exe: filepath.Join(t.TempDir(), "bridgectl")}}
	c.cfg.AllowedRoots = []string{root}
	c.cfg.StateDir = t.TempDir()
	p, err := c.locateHarness()
	if p == planted || err == nil {
		t.Fatalf("locateHarness = %q, %v: the planted claude was found", p, err)
	}
	if !strings.Contains(err.Error(), "not found") {
		t.Errorf("error %q does not say it was not found", err)
	}
}

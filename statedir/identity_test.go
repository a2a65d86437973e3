package statedir

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestIdentifyTellsARecycledPidApart(t *testing.T) {
	self, err := Identify(os.Getpid())
	if errors.Is(err, ErrNoIdentity) {
		t.Skip(err)
	}
	if err != nil || self.Start == "" || self.PID != os.Getpid() {
		t.Fatalf("Identify(self) = %+v, %v", self, err)
	}
	if exe, _ := os.Executable(); self.Exe != "" && self.Exe != exe {
		t.Errorf("exe = %q, want %q", self.Exe, exe)
	}
	if err := self.Check(); err != nil {
		t.Errorf("Check of this very process: %v", err)
	}

	other := self
	other.Start += "0"
	if err := other.Check(); err == nil || !strings.Contains(err.Error(), "a different process") {
		t.Errorf("Check with another start time = %v, want a different process", err)
	}
	if err := (Process{PID: os.Getpid()}).Check(); !errors.Is(err, ErrNoIdentity) {
		t.Errorf("Check of a record without a start time = %v, want ErrNoIdentity", err)
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := child.Check(); !errors.Is(err, ErrGone) {
		t.Errorf("Check of a reaped child = %v, want ErrGone", err)
	}
}

func TestLockHolderNamesTheDaemon(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := d.LockHolder(); pid != 0 || err != nil {
		t.Fatalf("no lock file: LockHolder = %d, %v; want 0", pid, err)
	}
	l, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := d.LockHolder(); pid != os.Getpid() || err != nil {
		t.Errorf("held: LockHolder = %d, %v; want %d", pid, err, os.Getpid())
	}
	// The portable probe, used where there is no /proc/locks.
	f, err := os.Open(d.LockFile())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held, err := probeHeld(f); !held || err != nil {
		t.Errorf("probe while held = %v, %v", held, err)
	}
	l.Unlock()
	if pid, err := d.LockHolder(); pid != 0 || err != nil {
		t.Errorf("released: LockHolder = %d, %v; want 0", pid, err)
	}
	if held, err := probeHeld(f); held || err != nil {
		t.Errorf("probe once released = %v, %v", held, err)
	}
	// The probe left no lock behind: the daemon can take it.
	again, err := d.Lock()
	if err != nil {
		t.Fatalf("Lock after the probes: %v", err)
	}
	again.Unlock()
	if _, err := os.Stat(filepath.Join(d.Root, "daemon.lock")); err != nil {
		t.Fatal(err)
	}
}

func TestSalvageKeepsTheWholeFields(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
	}{
		{"whole", `{"id":"a","steps":33}`, map[string]string{"id": `"a"`, "steps": "33"}},
		{"cut in a string", `{"id":"a","status":"runn`, map[string]string{"id": `"a"`}},
		{"cut after a number", `{"id":"a","steps":33`, map[string]string{"id": `"a"`}},
		{"cut in an object", `{"id":"a","partial":{"label":"x"`, map[string]string{"id": `"a"`}},
		{"not an object", `[1,2`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Salvage([]byte(tt.in))
			if len(got) != len(tt.want) {
				t.Fatalf("Salvage = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

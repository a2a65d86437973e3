package statedir

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLockIsExclusive(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.LockFile())
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file = %q, %v; want our pid %d", b, err, os.Getpid())
	}
	// flock belongs to the open file description, so a second open in this
	// process conflicts just as a second daemon would.
	second, err := d.Lock()
	var le *LockedError
	if err == nil || !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		second.Unlock()
		t.Fatalf("second Lock = %v, want a LockedError", err)
	}
	want := "another bridge serve (pid " + strconv.Itoa(os.Getpid()) + ") is using BRIDGE_STATE_DIR=" + d.Root + "; stop it with `bridgectl stop`"
	if err.Error() != want {
		t.Errorf("message = %q\nwant      %q", err.Error(), want)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := d.Lock()
	if err != nil {
		t.Fatalf("Lock after Unlock = %v", err)
	}
	again.Unlock()
}

package daemonctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnitFromCgroup(t *testing.T) {
	tests := []struct {
		name, cgroup, unit string
		user               bool
	}{
		{"user unit (v2)", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/deepseek-bridge.service\n", "deepseek-bridge.service", true},
		{"system unit (v2)", "0::/system.slice/deepseek-bridge.service\n", "deepseek-bridge.service", false},
		{"terminal session", "0::/user.slice/user-1000.slice/session-3.scope\n", "", false},
		{"started from a terminal app", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope\n", "", false},
		{"the user manager itself", "0::/user.slice/user-1000.slice/user@1000.service/init.scope\n", "", false},
		{"v1 name=systemd", "12:pids:/\n1:name=systemd:/user.slice/user-1000.slice/user@1000.service/deepseek-bridge.service\n", "deepseek-bridge.service", true},
		{"container", "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n", "", false},
		{"docker service-like name in a non-systemd controller", "4:memory:/x/y.service\n0::/\n", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unit, user := unitFromCgroup(tt.cgroup)
			if unit != tt.unit || user != tt.user {
				t.Fatalf("got %q/%v, want %q/%v", unit, user, tt.unit, tt.user)
			}
		})
	}
}

// A daemon inside a unit's cgroup runs under systemd only when it is that
// unit's main process: a daemon started by a test, or from a shell that a
// service runs (a CI runner, a tmux.service), shares the cgroup of a unit
// that is not the bridge's, and a reload must not restart that unit.
func TestSupervisingUnitIsTheDaemonsOwn(t *testing.T) {
	const cg = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/ci-runner.service\n"
	tests := []struct {
		name    string
		mainPID int
		showErr error
		want    string
	}{
		{"the unit's main process", 4242, nil, "ci-runner.service"},
		{"another process of the unit's cgroup", 17, nil, ""},
		{"a unit with no main process", 0, nil, ""},
		{"systemctl cannot tell", 0, errors.New("Failed to connect to bus"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			show := func(unit string, user bool) (int, error) {
				asked = append(asked, fmt.Sprintf("%s user=%v", unit, user))
				return tt.mainPID, tt.showErr
			}
			unit, user := supervisingUnit(cg, 4242, show)
			if unit != tt.want || (unit != "" && !user) {
				t.Fatalf("got %q/%v, want %q", unit, user, tt.want)
			}
			if len(asked) != 1 || asked[0] != "ci-runner.service user=true" {
				t.Fatalf("systemctl asked %v", asked)
			}
		})
	}
	if unit, _ := supervisingUnit("0::/user.slice/user-1000.slice/session-3.scope\n", 4242, func(string, bool) (int, error) {
		t.Fatal("systemctl asked about a scope")
		return 0, nil
	}); unit != "" {
		t.Fatalf("a terminal session: %q", unit)
	}
}

// mainPIDOf asks systemctl, as `systemctl [--user] show -P MainPID UNIT`.
func TestMainPIDOfAsksSystemctl(t *testing.T) {
	dir := t.TempDir()
	argv := filepath.Join(dir, "argv")
	script := "#!/bin/sh\necho \"$@\" > " + argv + "\necho 4242\n"
	if err := os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	pid, err := mainPIDOf("deepseek-bridge.service", true)
	if err != nil || pid != 4242 {
		t.Fatalf("mainPIDOf = %d, %v", pid, err)
	}
	b, _ := os.ReadFile(argv)
	if got := strings.TrimSpace(string(b)); got != "--user show --property=MainPID --value deepseek-bridge.service" {
		t.Fatalf("systemctl argv: %q", got)
	}
}

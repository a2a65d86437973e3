package daemonctl

import "testing"

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

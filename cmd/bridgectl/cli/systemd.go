package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// systemdUnit names the systemd service that runs pid ("" when none), read
// from /proc/PID/cgroup, and whether it is a user unit.
func systemdUnit(pid int) (unit string, user bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", false
	}
	return unitFromCgroup(string(b))
}

// unitFromCgroup reads a /proc/PID/cgroup file (v1 or v2).
func unitFromCgroup(cgroup string) (unit string, user bool) {
	for _, l := range strings.Split(strings.TrimSpace(cgroup), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || (parts[0] != "0" && !strings.Contains(parts[1], "systemd")) {
			continue
		}
		segs := strings.Split(parts[2], "/")
		last := segs[len(segs)-1]
		if !strings.HasSuffix(last, ".service") || strings.HasPrefix(last, "user@") {
			continue
		}
		return last, strings.Contains(parts[2], "/user@")
	}
	return "", false
}

// restartUnit restarts the daemon through systemd, so it stays supervised,
// and waits for the new daemon's /health.
func (c *ctl) restartUnit(ctx context.Context, unit string, user bool, oldPID int) (daemonStatus, error) {
	args := []string{"restart", unit}
	if user {
		args = append([]string{"--user"}, args...)
	} else {
		return daemonStatus{}, fmt.Errorf("the daemon runs as the system unit %s: restart it with `sudo systemctl restart %s`", unit, unit)
	}
	fmt.Fprintf(c.e.Stdout, "the daemon runs under systemd: systemctl %s\n", strings.Join(args, " "))
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(sctx, "systemctl", args...).CombinedOutput(); err != nil {
		return daemonStatus{}, fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	deadline := time.NewTimer(daemonStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var info daemonInfo
		if err := statedir.ReadJSON(c.dir.DaemonInfoFile(), &info); err == nil && info.PID != oldPID && info.PID != 0 {
			addr := dialAddr(info.Addr)
			if probeHealth(ctx, c.e.HTTP, addr) == nil {
				return daemonStatus{PID: info.PID, Info: &info, Addr: addr, Healthy: true}, nil
			}
		}
		select {
		case <-ctx.Done():
			return daemonStatus{}, ctx.Err()
		case <-deadline.C:
			return daemonStatus{}, fmt.Errorf("after `systemctl %s` no new daemon answered /health within %v: `journalctl --user -u %s`", strings.Join(args, " "), daemonStartTimeout, unit)
		case <-tick.C:
		}
	}
}

package daemonctl

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

// SystemdUnit names the systemd service that runs pid ("" when none), read
// from /proc/PID/cgroup, and whether it is a user unit.
func SystemdUnit(pid int) (unit string, user bool) {
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
func (c *Controller) restartUnit(ctx context.Context, unit string, user bool, oldPID int) (Status, error) {
	args := []string{"restart", unit}
	if user {
		args = append([]string{"--user"}, args...)
	} else {
		return Status{}, fmt.Errorf("the daemon runs as the system unit %s: restart it with `sudo systemctl restart %s`", unit, unit)
	}
	fmt.Fprintf(c.stdout(), "the daemon runs under systemd: systemctl %s\n", strings.Join(args, " "))
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(sctx, "systemctl", args...).CombinedOutput(); err != nil {
		return Status{}, fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	timeout := c.startTimeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond) // no event says when the new daemon is up
	defer tick.Stop()
	for {
		var info statedir.DaemonInfo
		if err := statedir.ReadJSON(c.Dir.DaemonInfoFile(), &info); err == nil && info.PID != oldPID && info.PID != 0 {
			addr := DialAddr(info.Addr)
			if Health(ctx, c.httpClient(), addr) == nil {
				return Status{PID: info.PID, Info: &info, Addr: addr, Healthy: true}, nil
			}
		}
		select {
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-deadline.C:
			return Status{}, fmt.Errorf("after `systemctl %s` no new daemon answered /health within %v: `journalctl --user -u %s`", strings.Join(args, " "), timeout, unit)
		case <-tick.C:
		}
	}
}

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

// SystemdUnit names the systemd service that runs pid ("" when none), and
// whether it is a user unit: the service of pid's cgroup (/proc/PID/cgroup),
// when pid is that service's main process. A daemon started from a shell or a
// test that some other service runs (a CI runner, a tmux.service) shares that
// service's cgroup; restarting the service would restart what runs it.
func SystemdUnit(pid int) (unit string, user bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", false
	}
	return supervisingUnit(string(b), pid, mainPIDOf)
}

// supervisingUnit is SystemdUnit on a cgroup file's text, with show telling a
// unit's main pid.
func supervisingUnit(cgroup string, pid int, show func(unit string, user bool) (int, error)) (string, bool) {
	unit, user := unitFromCgroup(cgroup)
	if unit == "" {
		return "", false
	}
	if main, err := show(unit, user); err != nil || main != pid {
		return "", false
	}
	return unit, user
}

// mainPIDOf is the main pid systemd records for unit (0 when none).
func mainPIDOf(unit string, user bool) (int, error) {
	args := []string{"show", "--property=MainPID", "--value", unit}
	if user {
		args = append([]string{"--user"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", args...).Output()
	if err != nil {
		return 0, fmt.Errorf("systemctl %s: %w", strings.Join(args, " "), err)
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
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

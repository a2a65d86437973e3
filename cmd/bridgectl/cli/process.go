package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
var stopGrace = 10 * time.Second

// child is a process bridgectl started in its own session. done closes when it
// exits (bridgectl reaps it while it runs; after bridgectl exits, init does).
type child struct {
	pid  int
	done chan struct{}
	err  error // valid after done
}

// spawnDetached starts bin in its own session and process group, with stdout
// and stderr appended to logPath after a marker line, and returns at once.
func spawnDetached(bin string, args, env []string, dir, logPath, marker string) (*child, error) {
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", logPath, err)
	}
	defer lf.Close()
	if _, err := fmt.Fprintf(lf, "%s\n", marker); err != nil {
		return nil, fmt.Errorf("write log %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = lf
	cmd.Stderr = lf
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	c := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// startMarker is the line written into a log before each start; scrapers read
// only what follows the latest one.
func startMarker(what string, now time.Time) string {
	return fmt.Sprintf("=== bridgectl %s %s pid %d ===", what, now.UTC().Format(time.RFC3339), os.Getpid())
}

// afterLatestMarker returns the part of a log after its latest `=== bridgectl WHAT` line.
func afterLatestMarker(log []byte, what string) []byte {
	needle := []byte("=== bridgectl " + what + " ")
	s := string(log)
	i := strings.LastIndex(s, string(needle))
	if i < 0 {
		return log
	}
	rest := log[i:]
	if nl := strings.IndexByte(string(rest), '\n'); nl >= 0 {
		return rest[nl+1:]
	}
	return nil
}

// readPID reads a pid file; 0 when there is none.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s is corrupt (%q): remove it", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

func writePID(path string, pid int) error {
	return statedir.WriteFileAtomic(path, []byte(strconv.Itoa(pid)+"\n"))
}

// livePID returns the pid in path if that process is alive and looks like
// what we started (its command line contains want); else 0.
func livePID(path, want string) int {
	pid, err := readPID(path)
	if err != nil || pid == 0 {
		return 0
	}
	if !pidAlive(pid) || !procMatches(pid, want) {
		return 0
	}
	return pid
}

// stopPID stops the process (and its process group, if it leads one): SIGTERM,
// up to grace to exit, then SIGKILL. It returns once the process is gone.
func stopPID(ctx context.Context, pid int, grace time.Duration) error {
	if !pidAlive(pid) {
		return nil
	}
	group := leadsGroup(pid)
	if err := terminate(pid, group); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	if waitGone(ctx, pid, grace) {
		if group {
			killGroupLeftovers(pid)
		}
		return nil
	}
	if err := kill(pid, group); err != nil {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	if !waitGone(ctx, pid, 5*time.Second) {
		return fmt.Errorf("pid %d is still alive after SIGKILL", pid)
	}
	if group {
		killGroupLeftovers(pid)
	}
	return nil
}

// waitGone polls until pid is gone or d passes.
func waitGone(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if !pidAlive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return !pidAlive(pid)
		case <-t.C:
		}
	}
}

// lookPath finds name on the PATH of env (not bridgectl's own, so tests can steer it).
func lookPath(e *Env, name string) (string, error) {
	path, _ := e.Getenv("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		for _, ext := range exeExts() {
			p := filepath.Join(dir, name+ext)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found on PATH", name)
}

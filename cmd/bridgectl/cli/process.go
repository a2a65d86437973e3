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
	proc statedir.Process // read while it is our unreaped child: surely it
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
	c.proc, err = statedir.Identify(c.pid)
	if err != nil {
		c.proc = statedir.Process{PID: c.pid}
	}
	c.proc.Exe = "" // a script it runs may still exec another program; the start time stays
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop stops the child's process group, unless it has exited already.
func (c *child) stop(ctx context.Context, grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = stopProc(ctx, c.proc, grace)
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

// alive reports whether p still runs and is still p: a pid that was freed
// and reused by another process is not (where the OS tells a start time; on
// others the proof made before the first signal stands).
func alive(p statedir.Process) bool {
	if !pidAlive(p.PID) {
		return false
	}
	return p.Start == "" || p.Check() == nil
}

// stopProc stops p (and its process group, if it leads one): SIGTERM, up to
// grace to exit, then SIGKILL. Every signal goes only to p as recorded: once
// its pid names another process, p is gone. The caller has proved p is the
// daemon or the tunnel bridgectl started. It returns once p is gone.
func stopProc(ctx context.Context, p statedir.Process, grace time.Duration) error {
	if !alive(p) {
		return nil
	}
	pid := p.PID
	group := leadsGroup(pid)
	if err := terminate(pid, group); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	if waitGone(ctx, p, grace) {
		if group {
			killGroupLeftovers(pid)
		}
		return nil
	}
	if !alive(p) {
		return nil
	}
	if err := kill(pid, group); err != nil {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	if !waitGone(ctx, p, 5*time.Second) {
		return fmt.Errorf("pid %d is still alive after SIGKILL", pid)
	}
	if group {
		killGroupLeftovers(pid)
	}
	return nil
}

// waitGone polls until p is gone or d passes.
func waitGone(ctx context.Context, p statedir.Process, d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if !alive(p) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return !alive(p)
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

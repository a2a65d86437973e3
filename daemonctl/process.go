package daemonctl

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

// Child is a process started in its own session (Spawn). Done closes when it
// exits: the starter reaps it while it runs; after the starter exits, init
// does.
type Child struct {
	PID  int
	Proc statedir.Process // read while it is our unreaped child: surely it
	done chan struct{}
	err  error // valid after done
}

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is how the child exited, once Done is closed.
func (c *Child) Err() error { return c.err }

// Spawn starts bin in its own session and process group, with stdin from
// /dev/null and stdout and stderr appended to logPath after a marker line,
// and returns at once.
func Spawn(bin string, args, env []string, dir, logPath, marker string) (*Child, error) {
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
	c := &Child{PID: cmd.Process.Pid, done: make(chan struct{})}
	c.Proc, err = statedir.Identify(c.PID)
	if err != nil {
		c.Proc = statedir.Process{PID: c.PID}
	}
	// A script it runs may still exec another program; the start time stays.
	c.Proc.Exe = ""
	go func() { // owner: the Child; ends when the process exits
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Stop stops the child's process group, unless it has exited already.
func (c *Child) Stop(ctx context.Context, grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = StopProcess(ctx, c.Proc, grace)
}

// StartMarker is the line written into a log before each start ("=== bridgectl
// WHAT TIME pid N ==="); scrapers and `bridgectl logs` read only what follows
// the latest one.
func StartMarker(what string, now time.Time) string {
	return fmt.Sprintf("=== bridgectl %s %s pid %d ===", what, now.UTC().Format(time.RFC3339), os.Getpid())
}

// AfterLatestMarker returns the part of a log after its latest `=== bridgectl WHAT` line.
func AfterLatestMarker(log []byte, what string) []byte {
	needle := "=== bridgectl " + what + " "
	s := string(log)
	i := strings.LastIndex(s, needle)
	if i < 0 {
		return log
	}
	rest := log[i:]
	if nl := strings.IndexByte(string(rest), '\n'); nl >= 0 {
		return rest[nl+1:]
	}
	return nil
}

// ReadPID reads a pid file; 0 when there is none.
func ReadPID(path string) (int, error) {
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

// WritePID writes pid and a newline to path, atomically.
func WritePID(path string, pid int) error {
	return statedir.WriteFileAtomic(path, []byte(strconv.Itoa(pid)+"\n"))
}

// Alive reports whether p still runs and is still p: a pid that was freed
// and reused by another process is not (where the OS tells a start time; on
// others the proof made before the first signal stands).
func Alive(p statedir.Process) bool {
	if !PIDAlive(p.PID) {
		return false
	}
	return p.Start == "" || p.Check() == nil
}

// StopProcess stops p (and its process group, if it leads one): SIGTERM, up
// to grace to exit, then SIGKILL. Every signal goes only to p as recorded:
// once its pid names another process, p is gone. The caller has proved p is
// the daemon or the tunnel bridgectl started. It returns once p is gone.
func StopProcess(ctx context.Context, p statedir.Process, grace time.Duration) error {
	if !Alive(p) {
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
	if !Alive(p) {
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

// waitGone polls until p is gone or d passes (no event tells when another
// process exits).
func waitGone(ctx context.Context, p statedir.Process, d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if !Alive(p) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return !Alive(p)
		case <-t.C:
		}
	}
}

// LookPath finds the executable name in the directories of path (a PATH
// value: the caller's environment's, not this process's, so tests can steer
// it).
func LookPath(path, name string) (string, error) {
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

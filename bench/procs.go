package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

// Bounds of the child processes.
const (
	startTimeout = 20 * time.Second // until a child says where it listens
	stopGrace    = 15 * time.Second // SIGTERM → SIGKILL (the bridge gives calls 10 s)
	keepLines    = 20               // output lines kept for error messages
)

// proc is a child process the bench owns: its own process group, output
// read line by line by a goroutine it joins, stopped with SIGTERM then
// SIGKILL to the group.
type proc struct {
	name   string
	cmd    *exec.Cmd
	reaped chan struct{}
	read   chan struct{}
	mu     sync.Mutex
	tail   []string
	once   sync.Once
}

// startProc starts bin with args, env and dir; every output line (stdout
// and stderr together) goes to onLine, from the reading goroutine.
func startProc(name, bin string, args, env []string, dir string, onLine func(string)) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	ownGroup(cmd)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	w.Close()
	p := &proc{name: name, cmd: cmd, reaped: make(chan struct{}), read: make(chan struct{})}
	go func() { // owner: p; joined by stop
		defer close(p.read)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > keepLines {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if onLine != nil {
				onLine(line)
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { // owner: p; joined by stop
		defer close(p.reaped)
		_ = cmd.Wait()
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// lastLines is the tail of the output, for error messages.
func (p *proc) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop ends the process group (SIGTERM, SIGKILL after stopGrace) and waits
// for the process and its output reader.
func (p *proc) stop() {
	p.once.Do(func() {
		signalGroup(p.cmd, false)
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.reaped:
		case <-t.C:
			signalGroup(p.cmd, true)
			<-p.reaped
		}
		signalGroup(p.cmd, true) // anything left in the group
		<-p.read
	})
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.reaped:
		return true
	default:
		return false
	}
}

// waitFor waits until got delivers, the process ends or the start timeout
// passes.
func waitFor[T any](ctx context.Context, p *proc, got <-chan T) (T, error) {
	var zero T
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case v := <-got:
		return v, nil
	case <-p.reaped:
		return zero, fmt.Errorf("%s exited before it listened; its last output:\n%s", p.name, p.lastLines())
	case <-t.C:
		return zero, fmt.Errorf("%s did not listen within %s; its last output:\n%s", p.name, startTimeout, p.lastLines())
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// startListener runs bin (the deepseek-double or the minimal proxy), which
// says "listening http://127.0.0.1:PORT" first, and returns it with that URL.
func startListener(ctx context.Context, name, bin string, args []string, dir string) (*proc, string, error) {
	urlc := make(chan string, 1)
	p, err := startProc(name, bin, args, minimalEnv(), dir, func(line string) {
		if u, ok := strings.CutPrefix(line, "listening "); ok && strings.HasPrefix(u, "http://127.0.0.1:") {
			select {
			case urlc <- strings.TrimSpace(u):
			default:
			}
		}
	})
	if err != nil {
		return nil, "", err
	}
	u, err := waitFor(ctx, p, urlc)
	if err != nil {
		p.stop()
		return nil, "", err
	}
	return p, u, nil
}

// bridgeProc is a running `bridge serve`.
type bridgeProc struct {
	*proc
	addr      string    // main listener
	debugAddr string    // BRIDGE_DEBUG_ADDR listener
	stages    *stageLog // the spawn stages its log reports, by job
}

// startBridge runs `bridge serve` with env (plus BRIDGE_DEBUG_ADDR) and waits
// for both of its listeners, which it learns from its JSON log on stderr.
func startBridge(ctx context.Context, bin string, env []string, dir string) (*bridgeProc, error) {
	type addrs struct{ main, debug string }
	var mu sync.Mutex
	var got addrs
	ready := make(chan addrs, 1)
	stages := newStageLog()
	onLine := func(line string) {
		stages.take([]byte(line))
		var rec struct {
			Addr      string `json:"addr"`
			DebugAddr string `json:"debug_addr"`
			Message   string `json:"message"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if rec.DebugAddr != "" {
			got.debug = rec.DebugAddr
		}
		if rec.Addr != "" && strings.HasPrefix(rec.Message, "listening on http://") {
			got.main = rec.Addr
		}
		if got.main != "" && got.debug != "" {
			select {
			case ready <- got:
			default:
			}
		}
	}
	env = append(env, server.DebugAddrVar+"=127.0.0.1:0")
	p, err := startProc("bridge serve", bin, []string{"serve"}, env, dir, onLine)
	if err != nil {
		return nil, err
	}
	a, err := waitFor(ctx, p, ready)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("%w (a bridge without the debug endpoint predates server/debug.go: rebuild it)", err)
	}
	return &bridgeProc{proc: p, addr: a.main, debugAddr: a.debug, stages: stages}, nil
}

// runtimeStats asks the bridge's debug endpoint.
func (b *bridgeProc) runtimeStats(ctx context.Context) (server.RuntimeStats, error) {
	var st server.RuntimeStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.debugAddr+"/debug/runtime", nil)
	if err != nil {
		return st, err
	}
	resp, err := debugClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("debug endpoint: %w", err)
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("debug endpoint: HTTP %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Goroutines is a goroutine count of the bridge, with how many of them
// belong to idle keep-alive connections of its HTTP clients (a readLoop
// and a writeLoop each: to the double, kept up to the transport's idle
// timeout). Those are a connection pool, not a leak.
type Goroutines struct{ Total, Pool int }

// Own is the count without the connection pool.
func (g Goroutines) Own() int { return g.Total - g.Pool }

// goroutines reads the bridge's goroutine profile (debug=1: one block per
// distinct stack, headed by its count).
func (b *bridgeProc) goroutines(ctx context.Context) (Goroutines, error) {
	var g Goroutines
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.debugAddr+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return g, err
	}
	resp, err := debugClient.Do(req)
	if err != nil {
		return g, fmt.Errorf("debug endpoint: %w", err)
	}
	defer drain(resp.Body)
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return g, fmt.Errorf("goroutine profile: HTTP %d, %v", resp.StatusCode, err)
	}
	return parseGoroutineProfile(string(body))
}

func parseGoroutineProfile(text string) (Goroutines, error) {
	var g Goroutines
	head, rest, _ := strings.Cut(text, "\n")
	total, ok := strings.CutPrefix(head, "goroutine profile: total ")
	if !ok {
		return g, fmt.Errorf("not a goroutine profile: %.80q", head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(total))
	if err != nil {
		return g, fmt.Errorf("goroutine profile total %q: %w", total, err)
	}
	g.Total = n
	for block := range strings.SplitSeq(rest, "\n\n") {
		countStr, _, ok := strings.Cut(strings.TrimSpace(block), " @ ")
		if !ok {
			continue
		}
		c, err := strconv.Atoi(countStr)
		if err != nil {
			continue
		}
		if strings.Contains(block, "net/http.(*persistConn).readLoop") || strings.Contains(block, "net/http.(*persistConn).writeLoop") {
			g.Pool += c
		}
	}
	return g, nil
}

// profile saves the bridge's CPU profile over secs seconds (or a named
// profile when name is not "profile") to path.
func (b *bridgeProc) profile(ctx context.Context, name string, secs int, path string) error {
	u := "http://" + b.debugAddr + "/debug/pprof/" + name
	if name == "profile" {
		u += "?seconds=" + strconv.Itoa(secs)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := debugClient.Do(req)
	if err != nil {
		return fmt.Errorf("pprof %s: %w", name, err)
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof %s: HTTP %d", name, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// debugClient talks to the debug endpoint over its own connections, so they
// never mix with the load's.
var debugClient = &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}

// RSS is the resident set size of pid in bytes (VmRSS of /proc/PID/status).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("read RSS: odd VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read RSS: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("read RSS: no VmRSS line (process gone?)")
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// CPUTime is the user+system CPU time pid has used (all its threads).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("read CPU time: odd /proc stat line")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("read CPU time: short /proc stat line")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("read CPU time: utime/stime are not numbers")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// minimalEnv is what every child gets from the bench's own environment:
// nothing that could carry a real key or a real .env.
func minimalEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	if h := os.Getenv("HOME"); h != "" {
		env = append(env, "HOME="+h)
	}
	return env
}

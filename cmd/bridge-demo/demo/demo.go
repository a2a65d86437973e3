// Package demo runs the bridge end to end on loopback for `make demo`: the
// DeepSeek double and `bridge serve` as child processes on free ports, an
// mcp-go client talking to the capability URL, and a list of
// steps (Steps) that each call a tool and print what came back. Everything it
// starts is stopped before Run returns.
package demo

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
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
)

// Options configure one demo run.
type Options struct {
	BinDir string // holds bridge and deepseek-double (as `make build` leaves them)
	// ClaudeBin is the harness of the agent step; "" means the pinned install
	// (<BinDir>/../.cache/bin/claude, which scripts/install.sh claude makes).
	ClaudeBin string
	Timeout   time.Duration // the whole run, start to shutdown
	Out       io.Writer     // where the demo narrates
}

// demoKey is the fake API key the double accepts; nothing real is involved.
const demoKey = "sk-demo-double-key"

// Limits, so a broken build fails the demo instead of hanging it.
const (
	startTimeout = 20 * time.Second
	stopGrace    = 10 * time.Second
)

// Env is what a step works with.
type Env struct {
	Session *client.Client // mcp-go client connected to the bridge
	Dir     string         // the demo's temp dir (removed when Run returns)
	Out     io.Writer

	mu       sync.Mutex
	finished map[string]bool // progress tokens whose final notification (progress == total) was printed
	changed  chan struct{}   // closed and replaced on every progress notification
}

func newEnv(dir string, out io.Writer) *Env {
	return &Env{Dir: dir, Out: out, finished: map[string]bool{}, changed: make(chan struct{})}
}

// progress prints one notification as it arrives.
func (e *Env) progress(p mcp.ProgressNotificationParams) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.Total > 0 {
		fmt.Fprintf(e.Out, "  progress %g/%g %s\n", p.Progress, p.Total, p.Message)
		if p.Progress >= p.Total {
			e.finished[fmt.Sprint(p.ProgressToken)] = true
		}
	} else {
		fmt.Fprintf(e.Out, "  progress %g %s\n", p.Progress, p.Message)
	}
	close(e.changed)
	e.changed = make(chan struct{})
}

// WaitProgress waits (up to timeout) until the final progress notification
// of token was printed. Notifications are handled on another goroutine than
// results, so without this the answer could be printed before them.
func (e *Env) WaitProgress(token string, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		e.mu.Lock()
		done, ch := e.finished[token], e.changed
		e.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}

// Step is one part of the demo. To add one, append it to Steps.
type Step struct {
	Name string
	// Script holds the double's answers for this step. The scripts of all steps
	// are concatenated in step order and loaded into the double at start, so a
	// step consumes exactly its own turns (side "openai" for flash calls,
	// "anthropic" for the agent harness).
	Script []deepseektest.ScriptTurn
	// Setup, if set, runs before the bridge starts with a private directory and
	// returns extra environment for the bridge (e.g. DEEPSEEK_ALLOWED_ROOTS) and
	// script turns that need that directory (absolute paths in tool calls);
	// they follow the step's Script.
	Setup func(dir string) (env map[string]string, script []deepseektest.ScriptTurn, err error)
	// Run calls the bridge and prints the outcome; an error fails the demo.
	Run func(ctx context.Context, e *Env) error
}

// Steps is the demo, in order.
func Steps() []Step {
	return []Step{flashStep(), agentStep()}
}

// Run executes the demo. It returns an error if a step fails or anything it
// started does not stop.
func Run(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }

	binDir, err := filepath.Abs(o.BinDir) // children run in a temp dir
	if err != nil {
		return err
	}
	bins := map[string]string{}
	for _, name := range []string{"bridge", "deepseek-double"} {
		p := filepath.Join(binDir, name+exeSuffix())
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found in %s: run `make build` first: %w", name, o.BinDir, err)
		}
		bins[name] = p
	}

	dir, err := os.MkdirTemp("", "bridge-demo-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	// Everything started below is appended to children; the one deferred
	// shutdown stops them (newest first), then removes the temp dir.
	var children []*child
	defer func() {
		if len(children) > 0 {
			say("== shutting down ==")
		}
		for i := len(children) - 1; i >= 0; i-- {
			c := children[i]
			code, serr := c.stop(stopGrace)
			if serr == nil && code != 0 {
				serr = fmt.Errorf("exited with status %d after SIGTERM", code)
			}
			if serr != nil {
				say("%s (pid %d): %v", c.name, c.pid(), serr)
				err = errors.Join(err, fmt.Errorf("%s: %w", c.name, serr))
				continue
			}
			say("%s (pid %d): exited (status %d) after SIGTERM", c.name, c.pid(), code)
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove temp dir: %w", rerr))
		}
		if err == nil {
			say("no process of the demo is left; temp dir %s removed", dir)
		}
	}()

	steps := Steps()
	var script []deepseektest.ScriptTurn
	bridgeEnv := map[string]string{}
	for i, s := range steps {
		script = append(script, s.Script...)
		if s.Setup == nil {
			continue
		}
		sdir := filepath.Join(dir, fmt.Sprintf("step%d", i+1))
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return err
		}
		extra, turns, err := s.Setup(sdir)
		if err != nil {
			return fmt.Errorf("step %s: setup: %w", s.Name, err)
		}
		script = append(script, turns...)
		for k, v := range extra {
			bridgeEnv[k] = v
		}
	}
	scriptFile := filepath.Join(dir, "double-script.json")
	b, err := json.MarshalIndent(script, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(scriptFile, b, 0o600); err != nil {
		return err
	}

	// The DeepSeek double.
	double, doubleURL, err := startDouble(ctx, bins["deepseek-double"], scriptFile, dir)
	if err != nil {
		return err
	}
	children = append(children, double)
	say("DeepSeek double listening on %s (scripted answers, fake key; nothing leaves this machine)", doubleURL)

	// The bridge.
	secret, err := ids.Hex(32)
	if err != nil {
		return err
	}
	env := map[string]string{
		"HOST":              "127.0.0.1",
		"PORT":              "0",
		"MCP_PATH_SECRET":   secret,
		"DEEPSEEK_API_KEY":  demoKey,
		"DEEPSEEK_BASE_URL": doubleURL,
		"BRIDGE_STATE_DIR":  filepath.Join(dir, "state"),
		"BRIDGE_LOG_FILE":   filepath.Join(dir, "state", "bridge.log"),
	}
	for k, v := range bridgeEnv {
		env[k] = v
	}
	claude := o.ClaudeBin
	if claude == "" {
		claude = filepath.Join(binDir, "..", ".cache", "bin", "claude")
	}
	if _, err := os.Stat(claude); err != nil {
		return fmt.Errorf("the agent step needs the pinned Claude Code: run `scripts/install.sh claude` (%w)", err)
	}
	env["BRIDGE_CLAUDE_BIN"] = claude
	bridge, addr, err := startBridge(ctx, bins["bridge"], env, dir)
	if bridge != nil {
		children = append(children, bridge)
	}
	if err != nil {
		return withLog(err, filepath.Join(dir, "bridge.out"), secret)
	}
	url := "http://" + addr + "/mcp/" + secret
	say("bridge serve (pid %d) listening on http://%s/mcp/<secret> (a throwaway %d-character secret)", bridge.pid(), addr, len(secret))
	say("its settings: the per-user .env of a throwaway config home, %s (yours is not read)", filepath.Join(dir, "config", config.AppDir, ".env"))

	// A real MCP client: mcp-go's, the SDK the bridge serves with.
	e := newEnv(dir, o.Out)
	cs, ir, err := connect(ctx, url, e.progress)
	if err != nil {
		return withLog(fmt.Errorf("MCP connect: %w", err), env["BRIDGE_LOG_FILE"], secret)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	say("connected with the mcp-go client (protocol %s) to %s %s; tools: %s",
		ir.ProtocolVersion, ir.ServerInfo.Name, ir.ServerInfo.Version, strings.Join(names, ", "))

	e.Session = cs
	for i, s := range steps {
		say("== step %d: %s ==", i+1, s.Name)
		if err := s.Run(ctx, e); err != nil {
			return withLog(fmt.Errorf("step %s: %w", s.Name, err), env["BRIDGE_LOG_FILE"], secret)
		}
	}
	return nil
}

// child is a process the demo started, in its own process group.
type child struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{} // closed when Wait returned
	waitErr error
	drained chan struct{} // closed when its stdout pipe was read to the end (nil if none)
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func startChild(name string, cmd *exec.Cmd) (*child, error) {
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { // owner: c; joined in stop
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop asks the child to exit (SIGTERM to its group), kills it after grace,
// and checks that no process of its group is left.
func (c *child) stop(grace time.Duration) (int, error) {
	terminate(c.cmd)
	t := time.NewTimer(grace)
	defer t.Stop()
	var err error
	select {
	case <-c.done:
	case <-t.C:
		kill(c.cmd)
		<-c.done
		err = fmt.Errorf("did not exit within %v of SIGTERM; killed", grace)
	}
	if c.drained != nil {
		<-c.drained
	}
	if left := groupAlive(c.cmd); left {
		kill(c.cmd)
		err = errors.Join(err, errors.New("processes of its group were still running; killed"))
	}
	return c.cmd.ProcessState.ExitCode(), err
}

// startDouble runs deepseek-double and reads its first stdout line,
// "listening http://127.0.0.1:PORT".
func startDouble(ctx context.Context, bin, scriptFile, dir string) (*child, string, error) {
	out, err := os.Create(filepath.Join(dir, "double.out"))
	if err != nil {
		return nil, "", err
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--key", demoKey, "--script", scriptFile)
	cmd.Dir = dir
	cmd.Env = baseEnv()
	cmd.Stdout, cmd.Stderr = w, out
	c, err := startChild("deepseek-double", cmd)
	w.Close() // the child holds its own end
	if err != nil {
		r.Close()
		return nil, "", err
	}
	first := make(chan string, 1)
	c.drained = make(chan struct{})
	rest, err := os.Create(filepath.Join(dir, "double.stdout"))
	if err != nil {
		r.Close()
		return c, "", err
	}
	go func() { // owner: c (joined through c.drained)
		defer close(c.drained)
		defer r.Close()
		defer rest.Close()
		br := bufio.NewReader(r)
		line, _ := br.ReadString('\n')
		first <- strings.TrimSpace(line)
		_, _ = io.Copy(rest, br)
	}()
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case line := <-first:
		url, ok := strings.CutPrefix(line, "listening ")
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			c.stop(stopGrace)
			return nil, "", fmt.Errorf("deepseek-double: first line %q, want \"listening http://127.0.0.1:PORT\" (stderr in %s)", line, out.Name())
		}
		return c, url, nil
	case <-t.C:
	case <-ctx.Done():
	}
	c.stop(stopGrace)
	return nil, "", fmt.Errorf("deepseek-double did not say where it listens within %v", startTimeout)
}

// startBridge writes env into the per-user .env of a config dir inside dir
// (XDG_CONFIG_HOME, so the owner's own per-user .env is never read), runs
// `bridge serve` on it, and waits for <state>/daemon.json and a 200 from
// /health. It returns the child even on error, so the caller stops it.
func startBridge(ctx context.Context, bin string, env map[string]string, dir string) (*child, string, error) {
	out, err := os.Create(filepath.Join(dir, "bridge.out"))
	if err != nil {
		return nil, "", err
	}
	defer out.Close()
	cfgHome := filepath.Join(dir, "config")
	if err := writeUserEnv(cfgHome, env); err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "XDG_CONFIG_HOME="+cfgHome)
	cmd.Stdout, cmd.Stderr = out, out
	c, err := startChild("bridge serve", cmd)
	if err != nil {
		return nil, "", err
	}
	info := filepath.Join(env["BRIDGE_STATE_DIR"], "daemon.json")
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	addr := ""
	for {
		select {
		case <-c.done:
			return c, "", fmt.Errorf("bridge serve exited early: %v", c.waitErr)
		case <-deadline.C:
			return c, "", fmt.Errorf("bridge serve did not become healthy within %v", startTimeout)
		case <-ctx.Done():
			return c, "", ctx.Err()
		case <-tick.C:
		}
		if addr == "" {
			var di struct {
				Addr string `json:"addr"`
			}
			b, err := os.ReadFile(info)
			if err != nil || json.Unmarshal(b, &di) != nil || di.Addr == "" {
				continue
			}
			addr = di.Addr
		}
		resp, err := hc.Get("http://" + addr + "/health")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return c, addr, nil
		}
	}
}

// withLog adds the tail of a log file (secret masked) to err.
func withLog(err error, file, secret string) error {
	b, rerr := os.ReadFile(file)
	if rerr != nil || len(b) == 0 {
		return err
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, filepath.Base(file), strings.ReplaceAll(string(b), secret, "<secret>"))
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

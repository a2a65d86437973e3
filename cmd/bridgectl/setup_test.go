//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminal is the owner's side of a pty: what the program printed, and the
// keys typed in answer.
type terminal struct {
	t      *testing.T
	ptmx   *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	more   chan struct{} // signalled after every read
	closed chan struct{} // closed when reading ends
	seen   int           // expect looks after this offset
}

func newTerminal(t *testing.T, ptmx *os.File) *terminal {
	term := &terminal{t: t, ptmx: ptmx, more: make(chan struct{}, 1), closed: make(chan struct{})}
	go func() { // owner: the test; ends when the pty closes
		defer close(term.closed)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return term
}

// expect waits until s appears after what was already matched.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	for {
		term.mu.Lock()
		text := term.out.String()
		term.mu.Unlock()
		if i := strings.Index(text[term.seen:], s); i >= 0 {
			term.seen += i + len(s)
			return
		}
		select {
		case <-term.more:
		case <-term.closed:
			term.mu.Lock()
			text = term.out.String()
			term.mu.Unlock()
			if !strings.Contains(text[term.seen:], s) {
				term.t.Fatalf("the terminal closed before %q:\n%s", s, text)
			}
		case <-deadline.C:
			term.t.Fatalf("no %q on the terminal:\n%s", s, text)
		}
	}
}

func (term *terminal) typeLine(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.ptmx, s+"\r"); err != nil {
		term.t.Fatal(err)
	}
}

// typeSecret types s once the program has turned echo off, as a person
// types a key after its prompt (type-ahead would be echoed by the pty).
func (term *terminal) typeSecret(s string) {
	term.t.Helper()
	if !poll.Until(30*time.Second, func() bool { return echoOff(term.ptmx) }) {
		term.t.Fatalf("echo never went off for the key:\n%s", term.text())
	}
	term.typeLine(s)
}

func (term *terminal) text() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// On a terminal, on a fresh HOME, setup asks for each setting (the key
// without echo, probed: a rejected one is named and asked again), starts the
// daemon, prints each host's registration and ends with doctor all OK; a host
// registered from that output completes a deepseek_flash call.
func TestSetupInAPty(t *testing.T) {
	w := newWorld(t) // the binaries and the double; its .env is not used
	claude := testenv.ClaudeBin(t)
	home := filepath.Join(w.dir, "fresh-home")
	root := filepath.Join(w.dir, "projects")
	for _, d := range []string{home, root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{
		"PATH=/usr/bin:/bin", "HOME=" + home, "TERM=dumb", "PORT=0",
		"DEEPSEEK_BASE_URL=" + w.double.URL(),
		"BRIDGE_CLOUDFLARED_BIN=" + fakeCloudflared(t),
		"BRIDGECTL_E2E_MARKER=" + w.marker,
	}
	term, exited := setupInAPty(t, environ)

	const wrongKey = "sk-not-the-right-key-0000"
	term.expect("base URL: the DeepSeek API (OpenAI-compatible) [" + w.double.URL() + "]: ")
	term.typeLine("")
	term.expect("key: DeepSeek API key, typed without echo [none set")
	term.typeSecret(wrongKey)
	term.expect("key: rejected by " + w.double.URL() + " (401): check the key")
	term.expect("typed without echo [")
	term.typeSecret(testKey)
	term.expect("key: accepted by " + w.double.URL() + ", balance 110.00 CNY")
	term.expect("secret: MCP_PATH_SECRET generated")
	term.expect("roots: directories agent jobs may work in")
	term.typeLine("/no/such/dir")
	term.expect("/no/such/dir")
	term.expect("roots: directories agent jobs may work in")
	term.typeLine(root)
	term.expect("roots: " + root)
	term.expect("approval: a human answers commands off the allow list (on), or nobody (off, trusted runs only) [on]: ")
	term.typeLine("")
	term.expect("approval: on")
	term.expect("sandbox: bubblewrap and socat found")
	term.expect("claude: Claude Code not found; its path, or Enter to install it later []: ")
	term.typeLine(claude)
	term.expect("claude: 2.1.328 (Claude Code) (" + claude + ")")
	term.expect("tunnel: none, quick or named [none]: ")
	term.typeLine("")
	term.expect("started: pid")
	term.expect("-- claude:")
	term.expect("doctor:")
	term.expect("next: `bridgectl accept`")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("setup: %v\n%s", err, term.text())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("setup did not exit:\n%s", term.text())
	}
	<-term.closed
	out := term.text()
	t.Logf("setup:\n%s", out)

	// Doctor all OK: no WARN or FAIL line after "doctor:".
	doctor := out[strings.Index(out, "doctor:"):]
	if strings.Contains(doctor, "WARN") || strings.Contains(doctor, "FAIL") || !strings.Contains(doctor, "OK   API key: present and accepted") {
		t.Errorf("doctor is not all OK:\n%s", doctor)
	}
	envFile := filepath.Join(home, ".config", "deepseek-mcp-bridge", ".env")
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := envValue(string(env), "MCP_PATH_SECRET")
	if envValue(string(env), "DEEPSEEK_API_KEY") != testKey || len(secret) < 32 || envValue(string(env), "DEEPSEEK_ALLOWED_ROOTS") != root || envValue(string(env), "BRIDGE_CLAUDE_BIN") != claude ||
		envValue(string(env), "DEEPSEEK_BASE_URL") != w.double.URL() {
		t.Errorf(".env:\n%s", env)
	}
	for _, s := range []string{testKey, wrongKey, secret} {
		if strings.Contains(out, s) {
			t.Errorf("setup printed a key or the secret (%.8s…)", s)
		}
	}

	// A host registered from the output: claude's line names the command.
	var argv []string
	for _, l := range strings.Split(out, "\n") {
		if _, after, ok := strings.Cut(strings.TrimSpace(l), "claude mcp add --scope user deepseek -- "); ok {
			argv = strings.Fields(after)
		}
	}
	if len(argv) < 2 || argv[1] != "stdio" {
		t.Fatalf("no claude registration in the output:\n%s", out)
	}
	host := exec.Command(argv[0], argv[1:]...)
	host.Env = environ
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "registered-host", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: host}, nil)
	if err != nil {
		t.Fatalf("connect as the registered host: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deepseek_flash", Arguments: map[string]any{"task": "Say pong.", "mode": "analyze"}})
	if err != nil || res.IsError {
		t.Fatalf("deepseek_flash: %v %+v", err, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "pong") {
		t.Errorf("deepseek_flash answered %+v", res.Content)
	}
}

// envValue is KEY's value in a .env text ("" when unset).
func envValue(env, key string) string {
	v := ""
	for _, l := range strings.Split(env, "\n") {
		if rest, ok := strings.CutPrefix(l, key+"="); ok {
			v = rest
		}
	}
	return v
}

// On a terminal, with a base URL nothing answers (a closed loopback port),
// setup says the API cannot be reached and offers to keep the key unprobed;
// answered yes, it goes on with the other steps and writes the key with that
// base URL. Before, it stopped with nothing written and no way to name the
// endpoint.
func TestSetupInAPtyKeepsAnUnprobedKey(t *testing.T) {
	w := newWorld(t)
	claude := testenv.ClaudeBin(t)
	home := filepath.Join(w.dir, "unreachable-home")
	root := filepath.Join(w.dir, "projects-unreachable")
	for _, d := range []string{home, root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	environ := []string{
		"PATH=/usr/bin:/bin", "HOME=" + home, "TERM=dumb", "PORT=0",
		"BRIDGE_CLOUDFLARED_BIN=" + fakeCloudflared(t),
		"BRIDGECTL_E2E_MARKER=" + w.marker,
	}
	term, exited := setupInAPty(t, environ)

	term.expect("base URL: the DeepSeek API (OpenAI-compatible) [https://api.deepseek.com]: ")
	term.typeLine(closed)
	term.expect("key: DeepSeek API key, typed without echo [none set")
	term.typeSecret(testKey)
	term.expect("key: cannot reach " + closed)
	term.expect("key: keep it unprobed and go on with the other steps (yes), or stop here (no) [no]: ")
	term.typeLine("yes")
	term.expect("key: kept unprobed, with DEEPSEEK_BASE_URL=" + closed)
	term.expect("roots: directories agent jobs may work in")
	term.typeLine(root)
	term.expect("approval: a human answers commands off the allow list (on), or nobody (off, trusted runs only) [on]: ")
	term.typeLine("")
	term.expect("claude: Claude Code not found; its path, or Enter to install it later []: ")
	term.typeLine(claude)
	term.expect("tunnel: none, quick or named [none]: ")
	term.typeLine("")
	term.expect("doctor:")
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("setup did not exit:\n%s", term.text())
	}
	<-term.closed
	env, err := os.ReadFile(filepath.Join(home, ".config", "deepseek-mcp-bridge", ".env"))
	if err != nil {
		t.Fatal(err)
	}
	if envValue(string(env), "DEEPSEEK_API_KEY") != testKey || envValue(string(env), "DEEPSEEK_BASE_URL") != closed || envValue(string(env), "DEEPSEEK_ALLOWED_ROOTS") != root {
		t.Errorf(".env after a key kept unprobed:\n%s\nterminal:\n%s", env, term.text())
	}
	if strings.Contains(term.text(), testKey) {
		t.Error("setup printed the key")
	}
}

// setupInAPty starts `bridgectl setup` on a pty with environ, its daemon
// stopped at cleanup, and returns its terminal and its exit.
func setupInAPty(t *testing.T, environ []string) (*terminal, <-chan error) {
	t.Helper()
	t.Cleanup(func() { runCtl(t, environ, "", "stop") })
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	cmd := exec.Command(installed(t, "bridgectl"), "setup")
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = environ, tty, tty, tty
	cmd.SysProcAttr = ptySysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // owner: the test; joined by the caller
	return newTerminal(t, ptmx), exited
}

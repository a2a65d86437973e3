package mcpsock

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config/configtest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
)

// heldFlash reports progress, then holds the call until released or
// cancelled; it tells the test how the call ended.
type heldFlash struct {
	release chan struct{}
	ended   chan error
	started chan struct{} // nil: not told
}

func (h *heldFlash) Flash(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
	if h.started != nil {
		h.started <- struct{}{}
	}
	req.Progress(deepseek.ProgressEvent{Phase: "thinking", Tokens: 5})
	select {
	case <-h.release:
		h.ended <- nil
		return deepseek.FlashResult{Answer: "answer to " + req.Task, Model: "deepseek-flash", FinishReason: "stop"}, nil
	case <-ctx.Done():
		h.ended <- ctx.Err()
		return deepseek.FlashResult{}, ctx.Err()
	}
}

// session is a host on one side of Forward, the real server's socket
// endpoint on the other.
type session struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func (s *session) send(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// next is the next line the host reads, decoded.
func (s *session) next() (string, map[string]any) {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the forwarder's output ended")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("line %q is not JSON: %v", l, err)
		}
		return l, m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no line from the forwarder within 10 s")
	}
	return "", nil
}

func startSession(t *testing.T, flash tools.FlashClient) (*session, string) {
	t.Helper()
	cfg := configtest.New(t, nil)
	srv, err := server.New(server.Options{Config: cfg, Flash: flash, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.ServeSocket(ctx, ln); close(served) }()
	t.Cleanup(func() { stop(); <-served })
	return forwardTo(t, sock), sock
}

func forwardTo(t *testing.T, sock string) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, lines: make(chan string, 16), done: make(chan error, 1)}
	go func() {
		s.done <- Forward(t.Context(), Options{Socket: sock, Log: zerolog.Nop()}, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() { inW.Close(); <-s.done })
	return s
}

const flashCall = `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"deepseek_flash","arguments":{"task":"t"},"_meta":{"progressToken":"tok-%s"}}}`

func call(id string) string { return fmt.Sprintf(flashCall, id, id) }

// Progress reaches the host before the result, and ids come back byte for
// byte (one above 2^53, which a float would round).
func TestForwardProgressThenResult(t *testing.T) {
	h := &heldFlash{release: make(chan struct{}), ended: make(chan error, 1)}
	s, _ := startSession(t, h)
	const id = "12345678901234567891"
	s.send(call(id))
	line, m := s.next()
	if m["method"] != "notifications/progress" || !strings.Contains(line, `"progressToken":"tok-`+id+`"`) {
		t.Fatalf("first line %s, want the progress notification", line)
	}
	close(h.release)
	for {
		line, m = s.next()
		if m["method"] == nil {
			break
		}
	}
	if !strings.Contains(line, `"id":`+id+`,`) || !strings.Contains(line, "answer to t") {
		t.Fatalf("result line %s: want id %s byte for byte and the answer", line, id)
	}
}

// notifications/cancelled from the host ends the call in the daemon (its
// context ends) and the host gets no answer to it; the session goes on.
func TestForwardCancelEndsTheCall(t *testing.T) {
	h := &heldFlash{release: make(chan struct{}), ended: make(chan error, 1)}
	s, _ := startSession(t, h)
	s.send(call("8"))
	if _, m := s.next(); m["method"] != "notifications/progress" {
		t.Fatalf("want progress first, got %v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"user"}}`)
	select {
	case err := <-h.ended:
		if err == nil {
			t.Fatal("the call was not cancelled: it ended normally")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon's handler still runs 10 s after the cancel")
	}
	s.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	line, _ := s.next()
	if !strings.Contains(line, `"id":9`) {
		t.Fatalf("after the cancel the next line is %s; want the ping's answer (no answer to the cancelled call 8)", line)
	}
}

// A daemon that is gone is an error answer naming what to check, not silence.
func TestForwardDaemonGone(t *testing.T) {
	s := forwardTo(t, filepath.Join(t.TempDir(), "nobody.sock"))
	s.send(`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	line, m := s.next()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "a" || e == nil || !strings.Contains(e["message"].(string), "did not answer") || !strings.Contains(line, "bridgectl status") {
		t.Fatalf("answer %s", line)
	}
	s.send(`not json`)
	if line, m = s.next(); m["id"] != nil || !strings.Contains(line, "-32700") {
		t.Fatalf("bad line answered %s, want a parse error with id null", line)
	}
}

// A host that stops the session with a signal (ctx ends) while stdin is
// still open gets Forward back at once, its running calls dropped.
func TestForwardEndsWithCtxWhileStdinOpen(t *testing.T) {
	h := &heldFlash{release: make(chan struct{}), ended: make(chan error, 1), started: make(chan struct{}, 1)}
	_, sock := startSession(t, h)
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	defer outW.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, Options{Socket: sock, Log: zerolog.Nop()}, inR, outW) }()
	if _, err := io.WriteString(inW, call("5")+"\n"); err != nil {
		t.Fatal(err)
	}
	<-h.started
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Forward did not return after its ctx ended")
	}
	select {
	case <-h.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the call still runs in the daemon after the session ended")
	}
}

func TestHostElicitsHeaderIsTheServers(t *testing.T) {
	if HeaderHostElicits != server.HeaderHostElicits {
		t.Fatalf("mcpsock sends %q, the server reads %q", HeaderHostElicits, server.HeaderHostElicits)
	}
}

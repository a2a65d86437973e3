package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// stubJobs serves every agent tool (tools.AgentJobs, AgentContinuer,
// AgentMessenger, AgentLister). A start is recorded and answered with a
// running job, a wait with the job still running; the rest fail. reached
// counts every call that got here.
type stubJobs struct {
	mu     sync.Mutex
	calls  int
	starts []jobs.StartRequest
}

func (j *stubJobs) reached() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

func (j *stubJobs) count() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
}

func (j *stubJobs) Start(_ context.Context, req jobs.StartRequest) (jobs.Snapshot, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	j.starts = append(j.starts, req)
	return jobs.Snapshot{ID: "stub-job", Status: jobs.StatusRunning, CreatedAt: time.Now()}, nil
}

func (j *stubJobs) Wait(_ context.Context, id string, _ time.Duration, _ func(jobs.Snapshot)) (jobs.Snapshot, error) {
	j.count()
	return jobs.Snapshot{ID: id, Status: jobs.StatusRunning, CreatedAt: time.Now()}, nil
}

func (j *stubJobs) CancelBy(context.Context, string, jobs.StopReason) (jobs.Snapshot, error) {
	j.count()
	return jobs.Snapshot{}, errors.New("not in this test")
}

func (j *stubJobs) Message(string, string, string) (jobs.Snapshot, error) {
	j.count()
	return jobs.Snapshot{}, errors.New("not in this test")
}

func (j *stubJobs) Continue(context.Context, jobs.ContinueRequest) (jobs.Snapshot, error) {
	j.count()
	return jobs.Snapshot{}, errors.New("not in this test")
}

func (j *stubJobs) List() []jobs.Snapshot { return nil }
func (j *stubJobs) Part(id, part string) ([]byte, error) {
	return []byte("part " + part + " of " + id), nil
}

// TestServeLifecycle: the endpoint answers on the listener it is given, and
// a cancelled ctx stops the server. (Listening on PORT=0 and daemon.json are
// the daemon's: see package daemon.)
func TestServeLifecycle(t *testing.T) {
	s, err := New(Options{Config: testConfig(t), Flash: &fakeFlash{}, Logger: zerolog.Nop(), Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Error("still serving after shutdown")
	}
}

// TestShutdownAnswersLongCalls: a call still running at the end of the
// grace period has its context ended and is answered — a JSON-RPC response
// on its stream, an error result saying the bridge is shutting down — before
// the connection closes; then Serve returns.
func TestShutdownAnswersLongCalls(t *testing.T) {
	cfg := testConfig(t)
	cfg.StateDir = ""
	entered := make(chan struct{})
	ended := make(chan struct{})
	flash := &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		close(entered)
		<-ctx.Done()
		close(ended)
		return deepseek.FlashResult{}, fmt.Errorf("%w after 100ms", deepseek.ErrCanceled)
	}}
	s, err := New(Options{Config: cfg, Flash: flash, Logger: zerolog.Nop(), ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	type answer struct {
		r   response
		err error
	}
	answered := make(chan answer, 1)
	go func() { // joined through answered
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/mcp/"+testSecret,
			strings.NewReader(callBody(1, "deepseek_flash", map[string]any{"task": "x"}, nil)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{response{resp.StatusCode, resp.Header, b}, err}
	}()
	waitFor(t, entered, 10*time.Second, "the call")
	cancel()
	waitFor(t, ended, 10*time.Second, "the call's ctx to end")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the client got nothing")
	}
	if a.err != nil {
		t.Fatalf("the stream ended without its answer: %v", a.err)
	}
	msgs := messages(t, a.r)
	if string(msgs[len(msgs)-1].ID) != "1" {
		t.Fatalf("last message is not the answer to id 1: %s", a.r.body)
	}
	res := finalResult(t, msgs)
	want := "the bridge is shutting down: this call was still running 80ms after the bridge was asked to stop, " +
		"so it was stopped before it finished. Call the tool again once the bridge is running again."
	if !res.IsError || res.text() != want {
		t.Fatalf("IsError=%v text %q, want %q", res.IsError, res.text(), want)
	}
}

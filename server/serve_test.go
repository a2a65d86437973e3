package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// snapJobs is an AgentJobs that is never called (the snapshot test only
// needs the agent tools registered).
type snapJobs struct{}

func (snapJobs) Start(context.Context, jobs.StartRequest) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errors.New("not in this test")
}
func (snapJobs) Wait(context.Context, string, time.Duration, func(jobs.Snapshot)) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errors.New("not in this test")
}
func (snapJobs) Cancel(context.Context, string) (jobs.Snapshot, error) {
	return jobs.Snapshot{}, errors.New("not in this test")
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

// TestShutdownCancelsLongCalls: a call still running at the shutdown
// deadline has its context ended, and Serve returns.
func TestShutdownCancelsLongCalls(t *testing.T) {
	cfg := testConfig(t)
	cfg.StateDir = ""
	entered := make(chan struct{})
	ended := make(chan struct{})
	flash := &fakeFlash{fn: func(ctx context.Context, req deepseek.FlashRequest) (deepseek.FlashResult, error) {
		close(entered)
		<-ctx.Done()
		close(ended)
		return deepseek.FlashResult{}, ctx.Err()
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
	clientDone := make(chan struct{})
	go func() { // joined below; its error (connection closed) is the point
		defer close(clientDone)
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/mcp/"+testSecret,
			strings.NewReader(callBody(1, "deepseek_flash", map[string]any{"task": "x"}, nil)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitFor(t, entered, 10*time.Second, "the call")
	cancel()
	waitFor(t, ended, 10*time.Second, "the call's ctx to end")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	waitFor(t, clientDone, 10*time.Second, "the client")
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DebugAddrVar names the environment variable that turns the debug listener
// on (`make bench` sets it to 127.0.0.1:0). Unset or empty: no listener.
const DebugAddrVar = "BRIDGE_DEBUG_ADDR"

// Limits of the debug listener.
const (
	maxDebugProfile = 60 * time.Second // longest CPU profile one request may ask for
	debugShutdown   = 2 * time.Second
)

// RuntimeStats is what GET /debug/runtime answers: the figures `make bench`
// samples (goroutines before, during and after a load run; heap and stacks
// per held poll).
type RuntimeStats struct {
	Goroutines int    `json:"goroutines"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
	NumGC      uint32 `json:"num_gc"`
}

// ServeDebug serves a debug endpoint on addr until ctx ends; stop closes it
// early and waits for its goroutine. addr must be a loopback address: the
// endpoint has no secret, so it must never be reachable from elsewhere (nor
// through the tunnel, which forwards to the main listener only).
//
//	GET /debug/runtime                   RuntimeStats as JSON
//	GET /debug/pprof/profile?seconds=N   CPU profile (N ≤ 60, default 10)
//	GET /debug/pprof/{heap,goroutine,allocs,block,mutex,threadcreate}[?debug=1|2]
//
// addr "" leaves it off. A refused or unusable addr is logged and leaves it
// off too: it is a measuring aid, never a reason for the daemon not to run.
func ServeDebug(ctx context.Context, addr string, log zerolog.Logger) (stop func()) {
	if addr == "" {
		return func() {}
	}
	log = log.With().Str("component", "debug").Logger()
	ln, err := listenLoopback(ctx, addr)
	if err != nil {
		log.Error().Err(err).Msg("debug listener not started")
		return func() {}
	}
	hs := &http.Server{
		Handler:           debugMux(),
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	log.Info().Str("debug_addr", ln.Addr().String()).Msg("debug endpoint on http://" + ln.Addr().String() + "/debug/ (loopback only)")
	done := make(chan struct{})
	go func() { // owner: ServeDebug; joined by stop
		defer close(done)
		_ = hs.Serve(ln)
	}()
	stopCtx, cancel := context.WithCancel(ctx)
	watcher := make(chan struct{})
	go func() { // owner: ServeDebug; joined by stop
		defer close(watcher)
		<-stopCtx.Done()
		sctx, c := context.WithTimeout(context.Background(), debugShutdown)
		defer c()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-watcher
			<-done
		})
	}
}

// listenLoopback listens on addr only if its host is a loopback IP or
// "localhost".
func listenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: want HOST:PORT on loopback, e.g. 127.0.0.1:0: %w", DebugAddrVar, addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("%s=%q: the debug endpoint has no secret and listens on loopback only (127.0.0.1, ::1, localhost)", DebugAddrVar, addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listener on %s: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%s=%q resolved to %s, which is not loopback", DebugAddrVar, addr, ln.Addr())
	}
	return ln, nil
}

func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/runtime", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		st := RuntimeStats{
			Goroutines: runtime.NumGoroutine(), HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse,
			StackInuse: m.StackInuse, Sys: m.Sys, NumGC: m.NumGC,
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET /debug/pprof/profile", cpuProfile)
	mux.HandleFunc("GET /debug/pprof/{name}", namedProfile)
	return mux
}

func cpuProfile(w http.ResponseWriter, r *http.Request) {
	secs := 10
	if s := r.URL.Query().Get("seconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > int(maxDebugProfile/time.Second) {
			http.Error(w, fmt.Sprintf("seconds: want 1 to %d", int(maxDebugProfile/time.Second)), http.StatusBadRequest)
			return
		}
		secs = n
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.StartCPUProfile(w); err != nil {
		http.Error(w, "cpu profile: "+err.Error(), http.StatusConflict) // one at a time
		return
	}
	t := time.NewTimer(time.Duration(secs) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	pprof.StopCPUProfile()
}

func namedProfile(w http.ResponseWriter, r *http.Request) {
	p := pprof.Lookup(r.PathValue("name"))
	if p == nil {
		http.NotFound(w, r)
		return
	}
	debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
	if debug < 0 || debug > 2 {
		debug = 0
	}
	if debug > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	_ = p.WriteTo(w, debug) // a failed write means the client left; nothing to tell it
}

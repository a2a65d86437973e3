// Command minproxy is the minimal proxy of `make bench` (bench.MinimalProxy):
// JSON-RPC POST in, one chat request to the upstream, the answer out as one
// SSE event, with no MCP library, no checks and no logging. It is a floor to
// measure the bridge against, never a server to use. Its first stdout line is
// "listening http://HOST:PORT"; SIGTERM stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/bench"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "minproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	upstream := flag.String("upstream", "", "OpenAI-compatible base URL (the DeepSeek double)")
	key := flag.String("key", "", "the upstream's (fake) API key")
	flag.Parse()
	if *upstream == "" {
		return errors.New("--upstream is required (the double's URL)")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("--addr %q: a loopback address is required", *addr)
	}
	// The same upstream pool as the bridge's deepseek client.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	p, err := bench.NewMinimalProxy(*upstream, *key, deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, &http.Client{Transport: tr})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // owner: run; joined below
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

package daemonctl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// fakeEnv in a process's environment makes this test binary the daemon a
// test starts (Controller.Bin is the test binary): its value is the mode.
const fakeEnv = "DAEMONCTL_TEST_FAKE_DAEMON"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(fakeEnv); ok {
		os.Exit(fakeDaemon(mode))
	}
	os.Exit(testenv.Main(m))
}

// fakeDaemon stands in for `bridge serve [--env FILE]` and keeps the
// daemon's contract with daemonctl and nothing more: it reads the config,
// holds the state dir's lock, answers GET /health on HOST:PORT and on the
// unix socket, writes daemon.json once listening and removes it on SIGTERM.
// Modes: serve; exit (says why on stderr and exits 3 before listening);
// mute (holds the lock and never answers); ignore-term (must be SIGKILLed).
func fakeDaemon(mode string) int {
	envFile := ""
	if len(os.Args) == 4 && os.Args[1] == "serve" && os.Args[2] == "--env" {
		envFile = os.Args[3]
	}
	fmt.Fprintf(os.Stderr, "fake daemon: mode %s, args %q\n", mode, os.Args[1:])
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "fake daemon: refusing to start \x1b[31mred")
		return 3
	}
	cfg, err := config.Load(envFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := statedir.Open(cfg.StateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lock, err := dir.Lock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake daemon:", err)
		return 1
	}
	defer lock.Unlock()
	sigs := []os.Signal{syscall.SIGTERM, os.Interrupt}
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
		sigs = sigs[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	if mode == "mute" {
		<-ctx.Done()
		return 0
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sock, err := mcpsock.Listen(dir.SocketFile())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":"ok"}`) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	go srv.Serve(sock)
	self, _ := statedir.Identify(os.Getpid())
	info := statedir.DaemonInfo{Version: statedir.FormatVersion, PID: os.Getpid(), Addr: ln.Addr().String(),
		StartedAt: time.Now().UTC().Format(time.RFC3339), Exe: self.Exe, ProcStart: self.Start,
		Socket: sock.Addr().String(), EnvFile: cfg.EnvFile, AllowedRoots: []string{}}
	if err := statedir.WriteJSON(dir.DaemonInfoFile(), info); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	os.Remove(dir.DaemonInfoFile())
	srv.Close()
	return 0
}

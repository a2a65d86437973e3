package daemonctl

import (
	"context"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/mcpsock"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Two hosts launch `bridge stdio` at once with no daemon running: one
// daemon comes up, started by this process itself (its parent), and both
// sessions reach it; nothing is written to either host's stdout.
func TestStdioStartsOneDaemonForTwoHosts(t *testing.T) {
	t.Setenv(fakeEnv, "serve") // the daemon Stdio starts inherits this process's environment
	root := t.TempDir()
	state := filepath.Join(root, "state")
	envFile := filepath.Join(root, "bridge.env")
	if err := os.WriteFile(envFile, []byte("MCP_PATH_SECRET="+testSecret+"\nHOST=127.0.0.1\nPORT=0\nBRIDGE_STATE_DIR="+state+"\nBRIDGE_LOG_FILE="+filepath.Join(root, "stdio.log")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := statedir.Dir{Root: state}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		(&Controller{Dir: dir}).Stop(ctx)
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type host struct {
		out, errs syncbuf.Buffer
		err       error
	}
	hosts := make([]*host, 2)
	var wg sync.WaitGroup
	for i := range hosts {
		hosts[i] = &host{}
		wg.Add(1)
		go func(h *host) {
			defer wg.Done()
			h.err = Stdio(t.Context(), StdioOptions{EnvFile: envFile, Bridge: self, Stdin: strings.NewReader(""), Stdout: &h.out, Stderr: &h.errs})
		}(hosts[i])
	}
	wg.Wait()
	started := 0
	for i, h := range hosts {
		if h.err != nil || h.out.Len() != 0 || !strings.Contains(h.errs.String(), "bridge stdio: no bridge daemon answers on "+dir.SocketFile()) {
			t.Errorf("host %d: %v; stdout %q; stderr:\n%s", i, h.err, h.out.String(), h.errs.String())
		}
		if strings.Contains(h.errs.String(), "bridge stdio: daemon started: pid ") {
			started++
		}
	}
	holder, err := dir.LockHolder()
	if err != nil || holder == 0 || mcpsock.Ping(t.Context(), dir.SocketFile()) != nil {
		t.Fatalf("no daemon answers: lock holder %d (%v)", holder, err)
	}
	if started != 1 {
		t.Errorf("%d hosts say they started the daemon, want 1", started)
	}
	if ppid := testenv.ParentPID(t, holder); ppid != os.Getpid() {
		t.Errorf("the daemon's parent is %d, not this process (%d)", ppid, os.Getpid())
	}
	if log, _ := os.ReadFile(dir.LogFile()); !strings.Contains(string(log), " for bridge stdio pid "+strconv.Itoa(os.Getpid())+" ===") {
		t.Errorf("bridge.log lacks the marker naming bridge stdio:\n%s", log)
	}
}

// A configuration that does not load is the owner's to fix, said on stderr.
func TestStdioConfigError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.env")
	var out, errs syncbuf.Buffer
	err := Stdio(t.Context(), StdioOptions{EnvFile: missing, Bridge: "/nonexistent/bridge", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs})
	if !config.MustFix(err) || out.Len() != 0 || !strings.Contains(errs.String(), "bridge stdio: env file "+missing) {
		t.Fatalf("Stdio with a missing --env: %v; stdout %q; stderr %q", err, out.String(), errs.String())
	}
}

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// bystander starts a process that has nothing to do with the bridge but
// whose command line contains "serve", as a recycled pid might, and returns
// its identity; it is killed when the test ends.
func bystander(t *testing.T, kind string) (statedir.Process, string) {
	t.Helper()
	var cmd *exec.Cmd
	switch kind {
	case "sleep named serve":
		link := filepath.Join(t.TempDir(), "serve")
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			t.Skip(err)
		}
		if err := os.Symlink(sleep, link); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(link, "300")
	case "python3 -m http.server":
		py, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("no python3:", err)
		}
		cmd = exec.Command(py, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := "127.0.0.1:9" // nothing answers there
	if kind == "python3 -m http.server" {
		// "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
		line, err := bufio.NewReader(out).ReadString('\n')
		var port int
		if _, serr := fmt.Sscanf(line, "Serving HTTP on 127.0.0.1 port %d", &port); err != nil || serr != nil {
			t.Fatalf("http.server said %q: %v %v", line, err, serr)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	// Until the child has exec'd, its command line is empty or still ours.
	var b []byte
	poll.Until(5*time.Second, func() bool {
		b, _ = os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		return strings.Contains(string(b), "serve")
	})
	p, err := statedir.Identify(cmd.Process.Pid)
	if err != nil {
		t.Skip(err)
	}
	if !strings.Contains(string(b), "serve") {
		t.Fatalf("the bystander's command line %q does not contain serve", b)
	}
	return p, addr
}

// A stale bridge.pid, daemon.json, tunnel.pid and tunnel.json naming a live
// process that is not the bridge's — its command line says "serve", and for
// http.server it even listens where daemon.json says — are stale: status
// says so, stop and untunnel never signal it, start goes ahead.
func TestStalePidFilesNamingAnUnrelatedServeProcess(t *testing.T) {
	for _, kind := range []string{"sleep named serve", "python3 -m http.server"} {
		t.Run(kind, func(t *testing.T) {
			p, addr := bystander(t, kind)
			te := newTestEnv(t)
			if err := os.MkdirAll(te.state, 0o700); err != nil {
				t.Fatal(err)
			}
			pid := strconv.Itoa(p.PID)
			for name, body := range map[string]string{
				"bridge.pid":  pid + "\n",
				"daemon.json": `{"version":1,"pid":` + pid + `,"addr":"` + addr + `","started_at":"2026-05-01T10:00:00Z"}`,
				"tunnel.pid":  pid + "\n",
				// A cloudflared that had this pid before: another start time.
				"tunnel.json": `{"version":1,"kind":"quick","url":"https://x.trycloudflare.com","pid":` + pid + `,"origin":"http://` + addr + `","proc_start":"` + p.Start + `0"}`,
			} {
				if err := os.WriteFile(filepath.Join(te.state, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			out := te.must("status")
			if !strings.Contains(out, "daemon:    stopped") || !strings.Contains(out, "stale: ") || !strings.Contains(out, "names pid "+pid+", a live process that is not this state dir's daemon") {
				t.Errorf("status:\n%s", out)
			}
			if !strings.Contains(out, "tunnel:    recorded but cloudflared is gone (") || !strings.Contains(out, "not the cloudflared bridgectl started") {
				t.Errorf("status, tunnel line:\n%s", out)
			}
			var r statusReport
			if err := json.Unmarshal([]byte(te.must("status", "--json")), &r); err != nil || r.Daemon != "stopped" || r.PID != 0 || r.StalePID != p.PID || !strings.Contains(r.Stale, "stale") {
				t.Errorf("status --json = %+v, %v", r, err)
			}

			out = te.must("stop")
			if !strings.Contains(out, "nothing was running") || !strings.Contains(out, "stale, left alone") {
				t.Errorf("stop:\n%s", out)
			}
			if err := p.Check(); err != nil || !daemonctl.PIDAlive(p.PID) {
				t.Fatalf("stop signalled the bystander: %v", err)
			}
			for _, f := range []string{"bridge.pid", "daemon.json", "tunnel.pid", "tunnel.json"} {
				if _, err := os.Stat(filepath.Join(te.state, f)); err == nil {
					t.Errorf("stale %s left after stop", f)
				}
			}

			// start over the stale files goes ahead; stop then stops only it.
			os.WriteFile(filepath.Join(te.state, "bridge.pid"), []byte(pid+"\n"), 0o600)
			_, errs, code := te.run("start")
			if code != 0 || !strings.Contains(errs, "removing a stale pid file") {
				t.Fatalf("start over a stale pid file: %d %q", code, errs)
			}
			if out := te.must("stop"); !strings.Contains(out, "daemon stopped (pid ") {
				t.Errorf("stop after start: %q", out)
			}
			if err := p.Check(); err != nil {
				t.Fatalf("the bystander is gone: %v", err)
			}
		})
	}
}

// Another state dir's running daemon — a real `serve`, healthy, maybe
// another user's — named by this state dir's files is not this one's daemon.
func TestAnotherStateDirsDaemonIsLeftAlone(t *testing.T) {
	other := newTestEnv(t)
	other.must("start")
	var oinfo statedir.DaemonInfo
	json.Unmarshal([]byte(other.readFile("daemon.json")), &oinfo)

	te := newTestEnv(t)
	os.MkdirAll(te.state, 0o700)
	os.WriteFile(filepath.Join(te.state, "bridge.pid"), []byte(strconv.Itoa(oinfo.PID)+"\n"), 0o600)
	os.WriteFile(filepath.Join(te.state, "daemon.json"), []byte(other.readFile("daemon.json")), 0o600)
	if out := te.must("status"); !strings.Contains(out, "daemon:    stopped") || !strings.Contains(out, "stale, left alone") {
		t.Errorf("status:\n%s", out)
	}
	if out := te.must("stop"); !strings.Contains(out, "nothing was running") {
		t.Errorf("stop: %q", out)
	}
	if err := oinfo.Process().Check(); err != nil {
		t.Fatalf("the other state dir's daemon was signalled: %v", err)
	}
	if out := other.must("status"); !strings.Contains(out, "daemon:    running") {
		t.Errorf("other's status:\n%s", out)
	}
}

// A truncated daemon.json does not hide a running daemon: the lock names
// it, status says running and that the file is damaged, and stop stops it.
func TestTruncatedDaemonJSONStillShowsTheDaemon(t *testing.T) {
	te := newTestEnv(t, "PORT="+strconv.Itoa(freePort(t)))
	te.must("start")
	pid := te.daemonPID()
	full := te.readFile("daemon.json")
	os.WriteFile(filepath.Join(te.state, "daemon.json"), []byte(full[:len(full)/2]), 0o600)

	out := te.must("status")
	if !strings.Contains(out, fmt.Sprintf("daemon:    running, pid %d", pid)) || !strings.Contains(out, "daemon.json is damaged (") {
		t.Errorf("status with a truncated daemon.json:\n%s", out)
	}
	if _, errs, code := te.run("start"); code == 0 || !strings.Contains(errs, "already running") {
		t.Errorf("start beside it: %d %q", code, errs)
	}
	if out := te.must("stop"); !strings.Contains(out, fmt.Sprintf("daemon stopped (pid %d)", pid)) {
		t.Errorf("stop: %q", out)
	}
	if !poll.Until(5*time.Second, func() bool { return !daemonctl.PIDAlive(pid) }) {
		t.Error("the daemon survived stop")
	}
}

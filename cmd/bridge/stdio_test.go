package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/syncbuf"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// `bridge stdio` with no daemon running starts one itself — no bridgectl
// exists next to it or on PATH, and the daemon's parent is the bridge stdio
// process, so nothing ran in between — answers the host over it, and
// leaves it running when the host goes.
func TestStdioStartsTheDaemonItself(t *testing.T) {
	testenv.Real(t, "a built bridge and the daemon it starts")
	bin := testenv.Binary(t, "./cmd/bridge")
	path := t.TempDir() // PATH: nothing in it
	for _, dir := range []string{filepath.Dir(bin), path} {
		if _, err := os.Stat(filepath.Join(dir, "bridgectl")); err == nil {
			t.Fatalf("a bridgectl is in %s: the test proves nothing", dir)
		}
	}
	home := t.TempDir()
	state := filepath.Join(home, "state")
	envFile := filepath.Join(home, "bridge.env")
	env := "MCP_PATH_SECRET=" + testSecret + "\nHOST=127.0.0.1\nPORT=0\nBRIDGE_STATE_DIR=" + state + "\n"
	if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := statedir.Dir{Root: state}
	t.Cleanup(func() { // the daemon outlives the session: stop it here
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if s, err := (&daemonctl.Controller{Dir: dir}).Stop(ctx); err != nil || s.PID != 0 && daemonctl.PIDAlive(s.PID) {
			t.Errorf("stop the daemon: %v (pid %d)", err, s.PID)
		}
	})

	cmd := exec.Command(bin, "stdio", "--env", envFile)
	cmd.Env = []string{"PATH=" + path, "HOME=" + home}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// As a host does: tools/list only once initialize is answered (the
	// forwarder posts each message on its own, so answers to messages sent
	// together may come back in either order).
	for _, step := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n", `"id":1,`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n", `"deepseek_agent_start"`},
	} {
		io.WriteString(in, step.send)
		if !sc.Scan() || !strings.Contains(sc.Text(), step.want) {
			t.Fatalf("answer lacks %s: %.300q\nstderr:\n%s", step.want, sc.Text(), errb.String())
		}
	}

	// The daemon runs, started by this bridge stdio and nothing else.
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(dir.DaemonInfoFile(), &info); err != nil {
		t.Fatal(err)
	}
	if holder, err := dir.LockHolder(); err != nil || holder != info.PID || info.Socket != dir.SocketFile() {
		t.Fatalf("lock holder %d (%v), daemon.json pid %d socket %q", holder, err, info.PID, info.Socket)
	}
	if ppid := testenv.ParentPID(t, info.PID); ppid != cmd.Process.Pid {
		t.Errorf("the daemon's parent is pid %d, not bridge stdio (pid %d): something ran in between", ppid, cmd.Process.Pid)
	}
	if pid, err := daemonctl.ReadPID(dir.PIDFile()); err != nil || pid != info.PID {
		t.Errorf("bridge.pid names %d (%v), want the daemon %d", pid, err, info.PID)
	}
	log, _ := os.ReadFile(dir.LogFile())
	if !strings.Contains(string(log), "=== bridgectl start ") || !strings.Contains(string(log), " for bridge stdio pid "+strconv.Itoa(cmd.Process.Pid)+" ===") {
		t.Errorf("bridge.log lacks the start marker for this bridge stdio:\n%s", log)
	}
	for _, want := range []string{"bridge stdio: no bridge daemon answers on " + dir.SocketFile(), "bridge stdio: daemon started: pid " + strconv.Itoa(info.PID)} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(errb.String()+string(log), testSecret) {
		t.Error("the secret reached stderr or the log")
	}

	// The host goes: bridge stdio exits 0, the daemon stays.
	in.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bridge stdio after EOF: %v\n%s", err, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("bridge stdio did not end on EOF")
	}
	if !poll.Until(time.Second, func() bool { return daemonctl.Alive(info.Process()) }) {
		t.Fatal("the daemon ended with the session")
	}
}

// Before setup (no daemon, none can start: no secret, or one too short),
// bridge stdio still speaks MCP to a real client — the official SDK's —
// listing every tool and answering each call with an error result that names
// `bridgectl setup`; its stderr says each thing once, with one prefix and no
// JSON copy of a line; it exits 2 (the owner's to fix) when the host goes.
func TestStdioBeforeSetup(t *testing.T) {
	for _, tt := range []struct{ name, secret, why string }{
		{"no secret", "", "MCP_PATH_SECRET is not set"},
		{"short secret", "x7q2k", "MCP_PATH_SECRET is 5 characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t, map[string]string{"MCP_PATH_SECRET": tt.secret, "BRIDGE_LOG_FILE": ""})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			var errb syncbuf.Buffer
			done := make(chan int, 1)
			go func() { // owner: the test; joined below
				done <- run(t.Context(), []string{"stdio"}, inR, outW, &errb)
				outW.Close()
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
			if err != nil {
				t.Fatalf("initialize: %v\nstderr:\n%s", err, errb.String())
			}
			list, err := cs.ListTools(ctx, nil)
			if err != nil || len(list.Tools) != 10 {
				t.Fatalf("tools/list: %v %d tools", err, len(list.Tools))
			}
			for _, tool := range list.Tools {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool.Name, Arguments: map[string]any{}})
				if err != nil {
					t.Fatalf("%s: %v", tool.Name, err)
				}
				text := ""
				if len(res.Content) == 1 {
					if tc, ok := res.Content[0].(*sdk.TextContent); ok {
						text = tc.Text
					}
				}
				if !res.IsError || !strings.Contains(text, "run `bridgectl setup` in a terminal") || !strings.Contains(text, tt.why) {
					t.Errorf("%s: isError %v %q", tool.Name, res.IsError, text)
				}
			}
			cs.Close()
			select {
			case code := <-done:
				if code != exitConfig {
					t.Errorf("exit %d, want %d", code, exitConfig)
				}
			case <-ctx.Done():
				t.Fatal("stdio did not end when the host went")
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			seen := map[string]bool{}
			for _, l := range lines {
				if seen[l] || !strings.HasPrefix(l, "bridge stdio: ") || strings.HasPrefix(l, "bridge stdio: bridge stdio:") || strings.Contains(l, `"level"`) {
					t.Errorf("stderr line twice, without its one prefix, or as JSON: %q", l)
				}
				seen[l] = true
			}
			if !strings.Contains(errb.String(), tt.why) || !strings.Contains(errb.String(), "every tool answers with an error that says to run `bridgectl setup`") {
				t.Errorf("stderr:\n%s", errb.String())
			}
		})
	}
}

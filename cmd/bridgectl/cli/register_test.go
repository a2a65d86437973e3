package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// register prints what a host needs, with nothing left to define: the
// absolute bridge binary, `stdio`, and the .env when it is not the
// per-user one; --url prints the running daemon's URL, masked unless --show.
func TestRegisterPrintsPasteableConfig(t *testing.T) {
	te := newTestEnv(t)
	bin := fakeBridge(t)
	cases := []struct{ host, want string }{
		{"claude", "claude mcp add --scope user deepseek -- " + bin + " stdio --env " + te.envFile + "\n"},
		{"codex", "[mcp_servers.deepseek]\ncommand = \"" + bin + "\"\nargs = [\"stdio\", \"--env\", \"" + te.envFile + "\"]\n"},
	}
	for _, tc := range cases {
		if out := te.must("register", tc.host); out != tc.want {
			t.Errorf("register %s:\n%s\nwant:\n%s", tc.host, out, tc.want)
		}
	}
	var cursor struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	out := te.must("register", "cursor", "--name", "ds")
	if err := json.Unmarshal([]byte(out), &cursor); err != nil {
		t.Fatalf("register cursor is not JSON: %v\n%s", err, out)
	}
	if s := cursor.MCPServers["ds"]; s.Command != bin || strings.Join(s.Args, " ") != "stdio --env "+te.envFile {
		t.Errorf("register cursor --name ds: %+v", cursor)
	}

	if _, errs, code := te.run("register", "claude", "--url"); code != 1 || !strings.Contains(errs, "PORT=0 picks it at start") {
		t.Errorf("register --url before start (PORT=0): exit %d %q", code, errs)
	}
	te.must("start")
	url := te.must("url", "--bare", "--show")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp/"+testSecret+"\n") || strings.Count(url, "\n") != 1 {
		t.Fatalf("url --bare --show = %q, want the URL alone", url)
	}
	if masked := te.must("url", "--bare"); strings.Contains(masked, testSecret) || strings.Count(masked, "\n") != 1 || !strings.HasPrefix(masked, "http://127.0.0.1:") {
		t.Errorf("url --bare = %q, want the URL alone, masked", masked)
	}
	if out := te.must("register", "claude", "--url", "--show"); out != "claude mcp add --scope user --transport http deepseek "+strings.TrimSpace(url)+"\n" {
		t.Errorf("register claude --url --show = %q", out)
	}
	if out := te.must("register", "codex", "--url"); strings.Contains(out, testSecret) || !strings.Contains(out, "url = \"http://127.0.0.1:") {
		t.Errorf("register codex --url printed the secret or no URL: %q", out)
	}
	// A masked line says it is not ready to paste; a shown one says nothing.
	if _, errs, code := te.run("register", "claude", "--url"); code != 0 || !strings.Contains(errs, "add --show to print it in full") {
		t.Errorf("register claude --url (masked): exit %d, stderr %q lacks the --show hint", code, errs)
	}
	if _, errs, _ := te.run("register", "claude", "--url", "--show"); strings.Contains(errs, "--show") {
		t.Errorf("register --url --show still hints at --show: %q", errs)
	}
	for _, args := range [][]string{{"register"}, {"register", "vscode"}, {"register", "claude", "--name", "a b"}} {
		if _, errs, code := te.run(args...); code != 2 || !strings.Contains(errs, "register") {
			t.Errorf("%v: exit %d %q, want a usage error", args, code, errs)
		}
	}
}

// Linux has another `bridge` on PATH (iproute2's): register and start never
// take it for the DeepSeek bridge, and say so.
func TestFindBridgeRefusesIproute2(t *testing.T) {
	te := newTestEnv(t)
	te.unset("BRIDGE_BIN")
	fake := filepath.Join(te.pathDir, "bridge")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Object \"'$1'\" is unknown, try \"bridge help\".' >&2\nexit 255\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"register", "claude"}, {"start"}} {
		out, errs, code := te.run(args...)
		if code != 1 || !strings.Contains(errs, fake+") is not the DeepSeek MCP bridge (iproute2 has one too)") || strings.Contains(out, fake) {
			t.Errorf("%v with iproute2's bridge on PATH: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// unset drops name from the environment bridgectl runs with.
func (te *testEnv) unset(name string) {
	var env []string
	for _, kv := range te.environ {
		if !strings.HasPrefix(kv, name+"=") {
			env = append(env, kv)
		}
	}
	te.environ = env
}

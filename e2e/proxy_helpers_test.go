package e2e

// Helpers of the model-proxy tests (proxy_*_test.go): where the proxy
// listens, raw Anthropic requests to it, the expected usage of scripted
// turns, and a search of files and process environments for the real key.

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// modelProxyAddr is the model proxy's host:port from daemon.json
// ("harness":{"model_proxy":…}). It fails the test unless it is a loopback
// address on a port other than the public one.
func modelProxyAddr(t testing.TB, b *bridgeProc) string {
	t.Helper()
	var info statedir.DaemonInfo
	if err := statedir.ReadJSON(filepath.Join(b.StateDir(), "daemon.json"), &info); err != nil || info.Harness == nil {
		t.Fatalf("daemon.json: %v (harness %v)", err, info.Harness)
	}
	addr := info.Harness.ModelProxy
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("daemon.json harness.model_proxy = %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("the model proxy listens on %s, not loopback", addr)
	}
	if _, publicPort, _ := net.SplitHostPort(b.Addr()); port == publicPort {
		t.Fatalf("the model proxy shares the public port %s", port)
	}
	return addr
}

// messagesBody is a minimal Anthropic Messages request with tools (so the
// double would take a scripted turn if it ever got it).
var messagesBody = []byte(`{"model":"deepseek-flash","max_tokens":16,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`)

// anthropicError decodes an Anthropic error body: {"type":"error","error":{"type","message"}}.
func anthropicError(t testing.TB, body []byte) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" {
		t.Fatalf("not an Anthropic error body: %s", body)
	}
	return e.Error.Type, e.Error.Message
}

// wantUsage is what a job whose model calls were answered with us must
// report: the double's Anthropic usage puts cache hits in
// cache_read_input_tokens and the rest of the input in input_tokens.
func wantUsage(us ...dt.Usage) jobs.Usage {
	var u jobs.Usage
	for _, x := range us {
		u.InputTokens += x.InputTokens - x.CacheHitTokens
		u.CacheReadTokens += x.CacheHitTokens
		u.OutputTokens += x.OutputTokens
	}
	return u
}

// assertKeyNotUnder fails the test if any regular file under root holds key.
// It returns how many files it read, so a caller can tell it searched.
func assertKeyNotUnder(t testing.TB, root, key string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the real API key", p)
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", root, err)
	}
	return n
}

// jobEnvirons reads the environment and argv of every live process of the
// job's tree; it fails the test if either holds key.
func jobEnvirons(t testing.TB, id, key string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, pid := range harness.JobProcesses(id) {
		dir := filepath.Join("/proc", strconv.Itoa(pid))
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue // gone meanwhile
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if bytes.Contains(env, []byte(key)) || bytes.Contains(cmdline, []byte(key)) {
			t.Errorf("pid %d: the real key is in its environment or argv", pid)
		}
		out[pid] = splitNUL(env)
	}
	return out
}

func splitNUL(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(b, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

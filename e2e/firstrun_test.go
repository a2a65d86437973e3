package e2e

// The README's first-run steps on a fresh HOME, as a new user types them:
// the .env lands in the per-user config dir, every command finds it from any
// directory, and the line `bridgectl register claude` prints, pasted, gives
// Claude Code a connected server.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

func TestREADMEFirstRunOnAFreshHome(t *testing.T) {
	t.Parallel()
	d := startDouble(t)
	home := t.TempDir()
	somewhere := t.TempDir() // the directory the user types in: no .env
	project := filepath.Join(home, "src", "myproject")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	ctl := binary(t, "bridgectl")
	binary(t, "bridge")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Dir = env, somewhere
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s%s", name, args, err, out.String(), errb.String())
		}
		return out.String()
	}
	t.Cleanup(func() {
		cmd := exec.Command(ctl, "stop")
		cmd.Env, cmd.Dir = env, somewhere
		cmd.Run()
	})

	envFile := filepath.Join(home, ".config", "deepseek-mcp-bridge", ".env")
	if out := run(ctl, "secret"); !strings.Contains(out, "new secret written to "+envFile) {
		t.Fatalf("bridgectl secret: %s", out)
	}
	for p, want := range map[string]os.FileMode{envFile: 0o600, filepath.Dir(envFile): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v (%v), want %04o", p, fi.Mode().Perm(), err, want)
		}
	}
	// The README: put your key into that file (here the double's, and its URL; PORT=0 for a test).
	f, err := os.OpenFile(envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("DEEPSEEK_API_KEY=" + d.Key() + "\nDEEPSEEK_BASE_URL=" + d.URL() + "\nPORT=0\nBRIDGE_CLAUDE_BIN=" + claudeBin(t) + "\n")
	f.Close()
	run(ctl, "allow", project)
	if out := run(ctl, "start"); !strings.Contains(out, "started: pid ") {
		t.Fatalf("bridgectl start: %s", out)
	}
	status := run(ctl, "status")
	for _, want := range []string{"env file:  " + envFile + " (the running daemon's)", "roots:     " + project + " (from the daemon)", "socket:    " + filepath.Join(home, ".local", "state", "deepseek-mcp-bridge", "daemon.sock")} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	line := strings.TrimSpace(run(ctl, "register", "claude"))
	if want := "claude mcp add --scope user deepseek -- " + binary(t, "bridge") + " stdio"; line != want {
		t.Fatalf("register claude = %q, want %q", line, want)
	}
	// Paste it: the user's Claude Code registers the server and connects to it.
	words := strings.Fields(line)
	words[0] = claudeBin(t)
	run(words[0], words[1:]...)
	var list string
	if !poll.Until(60*time.Second, func() bool { // Claude Code's health check spawns bridge stdio
		list = run(claudeBin(t), "mcp", "list")
		return strings.Contains(list, "deepseek:") && strings.Contains(list, "Connected")
	}) {
		t.Fatalf("claude mcp list after pasting the line:\n%s", list)
	}
	t.Logf("claude mcp list:\n%s", list)
}

package sandbox

import (
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Inside the jail a command sees the workspace, the config dir, its /tmp,
// the system dirs and the read-only paths, and nothing else: not a file
// beside the workspace, not the daemon's home, not /etc/shadow.
func TestJailShowsOnlyWhatItBinds(t *testing.T) {
	bw := testenv.Bwrap(t)
	root := t.TempDir()
	mk := func(rel, body string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws := filepath.Dir(mk("roots/ws/main.go", "package main\n"))
	other := mk("roots/other/secret.txt", "other-workspace-canary\n")
	home := mk("home/doc.txt", "home-canary\n")
	tool := filepath.Dir(mk("toolchain/bin/tool", "toolchain\n"))
	cred := mk("toolchain/credentials.toml", "token-canary\n")
	cfg, tmp := filepath.Join(root, "cfg"), filepath.Join(root, "tmp")
	for _, d := range []string{cfg, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args, err := JailArgs(JailOptions{Bwrap: bw, Workspace: ws, ConfigDir: cfg, Tmp: tmp, ReadOnly: []string{tool, filepath.Dir(cred)}, Hide: []string{cred}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) (string, error) {
		cmd := exec.Command(args[0], append(args[1:], "/bin/sh", "-c", script)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("cat main.go && cat " + tool + "/tool && echo w > ws.txt && echo t > /tmp/t && echo c > " + cfg + "/c"); err != nil {
		t.Fatalf("the workspace, toolchain, /tmp and config dir: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "t")); err != nil || string(b) != "t\n" {
		t.Fatalf("/tmp is not the job's tmp dir: %q %v", b, err)
	}
	for _, p := range []string{other, home, cred, "/etc/shadow", "/root/.bashrc"} {
		if out, err := run("cat " + p); err == nil || strings.Contains(out, "canary") {
			t.Errorf("%s was readable in the jail: %s", p, out)
		}
	}
	if out, err := run("echo x > " + tool + "/x"); err == nil {
		t.Errorf("a read-only path was writable: %s", out)
	}
	if _, err := os.Stat(filepath.Join(tool, "x")); err == nil {
		t.Errorf("the write reached the toolchain")
	}
}

// A read-only workspace (a job policy's write_paths) is read-only in the
// jail, but for the dirs named writable; a writable dir outside it is refused.
func TestJailReadOnlyWorkspace(t *testing.T) {
	bw := testenv.Bwrap(t)
	root := t.TempDir()
	ws, cfg, tmp := filepath.Join(root, "ws"), filepath.Join(root, "cfg"), filepath.Join(root, "tmp")
	for _, d := range []string{filepath.Join(ws, "out"), filepath.Join(ws, "src"), cfg, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args, err := JailArgs(JailOptions{Bwrap: bw, Workspace: ws, ConfigDir: cfg, Tmp: tmp, WorkspaceReadOnly: true, WritableDirs: []string{filepath.Join(ws, "out")}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) error {
		return exec.Command(args[0], append(args[1:], "/bin/sh", "-c", script)...).Run()
	}
	if err := run("echo o > out/o.txt"); err != nil {
		t.Errorf("the writable dir was not writable: %v", err)
	}
	for _, p := range []string{"src/s.txt", "top.txt"} {
		if err := run("echo x > " + p); err == nil {
			t.Errorf("%s was writable in a read-only workspace", p)
		}
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s reached the disk", p)
		}
	}
	if _, err := JailArgs(JailOptions{Bwrap: bw, Workspace: ws, ConfigDir: cfg, Tmp: tmp, WorkspaceReadOnly: true, WritableDirs: []string{root}}); err == nil {
		t.Error("a writable dir outside the workspace was accepted")
	}
}

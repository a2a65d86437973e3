package main

// bridgectl from any directory: a daemon started with a project folder's
// .env (where the TypeScript bridge kept it) is found, read and acted on
// from elsewhere — status, reload, rotate, stop — and a reload with a
// broken .env stops nothing. Real bridge and bridgectl processes.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

type anyDir struct {
	t       *testing.T
	proj    string // holds .env, as the TypeScript bridge had it
	other   string // an unrelated folder, no .env
	state   string
	environ []string
	marker  string
}

func newAnyDir(t *testing.T) *anyDir {
	double, dir, suffix := worldBase(t)
	w := &anyDir{t: t, proj: filepath.Join(dir, "proj"), other: filepath.Join(dir, "elsewhere"),
		state: filepath.Join(dir, "xdg-state", "deepseek-mcp-bridge"), marker: "bridgectl-anydir-" + suffix}
	root := filepath.Join(dir, "root")
	for _, d := range []string{w.proj, w.other, root, filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := "DEEPSEEK_API_KEY=" + testKey + "\nMCP_PATH_SECRET=" + testSecret + "\nHOST=127.0.0.1\nPORT=0\n" +
		"DEEPSEEK_BASE_URL=" + double.URL() + "\nDEEPSEEK_ALLOWED_ROOTS=" + root + "\n# kept\nSOMETHING_ELSE=kept\n"
	if err := os.WriteFile(filepath.Join(w.proj, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	// No BRIDGE_ENV_FILE, no BRIDGE_STATE_DIR: the per-user defaults.
	w.environ = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "xdg-state"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg-config"),
		"BRIDGECTL_E2E_MARKER=" + w.marker}
	t.Cleanup(func() {
		w.ctl(w.proj, "--env", ".env", "stop")
		if left := (&world{marker: w.marker}).leftovers(); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})
	return w
}

// ctl runs bridgectl in dir.
func (w *anyDir) ctl(dir string, args ...string) (string, string, int) {
	return runCtl(w.t, w.environ, dir, args...)
}

func (w *anyDir) must(dir string, args ...string) (string, string) {
	w.t.Helper()
	out, errs, code := w.ctl(dir, args...)
	if code != 0 {
		w.t.Fatalf("bridgectl %v in %s: exit %d\n%s%s", args, dir, code, out, errs)
	}
	return out, errs
}

func (w *anyDir) pid() int {
	w.t.Helper()
	wd := &world{t: w.t, state: w.state}
	pid, _ := wd.daemonInfo()
	return pid
}

func TestCommandsActOnTheRunningDaemonFromAnyDirectory(t *testing.T) {
	w := newAnyDir(t)
	envFile := filepath.Join(w.proj, ".env")

	// In the project folder a ./.env alone is not read: it is named.
	if _, errs, code := w.ctl(w.proj, "status"); code != 0 || !strings.Contains(errs, envFile+" is not read") || !strings.Contains(errs, "bridgectl doctor --move-env") {
		t.Fatalf("status next to an unnamed ./.env: exit %d, stderr %q", code, errs)
	}
	w.must(w.proj, "--env", ".env", "start")
	pid1 := w.pid()

	// status elsewhere: the daemon's file, its secret and roots.
	out, errs := w.must(w.other, "status")
	for _, want := range []string{"daemon:    running, pid " + strconv.Itoa(pid1), "env file:  " + envFile + " (the running daemon's)", "(from the daemon)", "socket:    " + filepath.Join(w.state, "daemon.sock") + " (bridge stdio)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("status from elsewhere lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no MCP_PATH_SECRET") || strings.Contains(out, "roots:     none") {
		t.Errorf("status from elsewhere lost the daemon's secret or roots:\n%s", out)
	}
	if !strings.Contains(errs, "acting on the running daemon's .env "+envFile) {
		t.Errorf("status does not say it acts on the daemon's file: %q", errs)
	}

	// reload with a broken .env: nothing stops, and it says why.
	good, _ := os.ReadFile(envFile)
	for _, bad := range []struct{ line, why string }{
		{"BROKEN=\"unterminated\n", "not valid .env syntax near line"},
		{"BRIDGE_MAX_STEPS=many\n", "BRIDGE_MAX_STEPS"},
		{"BRIDGE_RUNTIME_ROOTS=" + filepath.Join(w.other, "no-such-venv") + "\n", "nothing was stopped"},
	} {
		if err := os.WriteFile(envFile, append(append([]byte{}, good...), bad.line...), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"reload", "restart", "rotate"} {
			_, errs, code := w.ctl(w.other, cmd)
			if code != 1 || !strings.Contains(errs, bad.why) || !strings.Contains(errs, strconv.Itoa(pid1)) {
				t.Errorf("%s with %q: exit %d, stderr %q; want exit 1 naming %q and the daemon kept", cmd, bad.line, code, errs, bad.why)
			}
			if pid := w.pid(); pid != pid1 {
				t.Fatalf("%s with a broken .env replaced the daemon (pid %d → %d)", cmd, pid1, pid)
			}
		}
		if b, _ := os.ReadFile(envFile); !bytes.Contains(b, []byte(testSecret)) {
			t.Fatalf("rotate with a broken .env wrote a secret anyway:\n%s", b)
		}
	}
	if err := os.WriteFile(envFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, code := w.ctl(w.other, "status"); code != 0 {
		t.Fatal("status after the broken reloads")
	}

	// rotate elsewhere: the daemon's file gets the new secret, nothing is created here.
	out, _ = w.must(w.other, "rotate")
	if !strings.Contains(out, "new secret written to "+envFile) || !strings.Contains(out, "old URL: 404 (revoked)") {
		t.Errorf("rotate from elsewhere:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(w.other, ".env")); err == nil {
		t.Error("rotate created a .env in the directory it ran in")
	}
	b, _ := os.ReadFile(envFile)
	if bytes.Contains(b, []byte(testSecret)) || !bytes.Contains(b, []byte("DEEPSEEK_API_KEY="+testKey)) || !bytes.Contains(b, []byte("SOMETHING_ELSE=kept")) {
		t.Errorf("the daemon's .env after rotate:\n%s", b)
	}
	pid2 := w.pid()
	if pid2 != pid1 {
		t.Errorf("rotate restarted the daemon (pid %d → %d): it takes the new secret over its socket", pid1, pid2)
	}
	out, _ = w.must(w.other, "reload")
	if pid3 := w.pid(); pid3 == pid2 || !strings.Contains(out, "reloaded: pid "+strconv.Itoa(pid3)) {
		t.Errorf("reload from elsewhere: %s", out)
	}
	if out, _ = w.must(w.other, "status"); !strings.Contains(out, "(the running daemon's)") || !strings.Contains(out, "(from the daemon)") {
		t.Errorf("after reload the daemon still reads its file:\n%s", out)
	}
	// Roots edited in the file but not reloaded: status shows both, marked.
	b, _ = os.ReadFile(envFile)
	root := strings.TrimSpace(strings.SplitN(strings.SplitN(string(b), "DEEPSEEK_ALLOWED_ROOTS=", 2)[1], "\n", 2)[0])
	if err := os.WriteFile(envFile, append(b, []byte("DEEPSEEK_ALLOWED_ROOTS="+w.other+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = w.must(w.other, "status")
	if !strings.Contains(out, "roots:     "+root+" (from the daemon)") || !strings.Contains(out, envFile+" says: "+w.other+" — `bridgectl reload` applies it") {
		t.Errorf("status with roots changed in the file:\n%s", out)
	}
	out, _ = w.must(w.other, "stop")
	if !strings.Contains(out, "daemon stopped") {
		t.Errorf("stop from elsewhere: %s", out)
	}
	if _, err := os.Stat(filepath.Join(w.state, "daemon.json")); err == nil {
		t.Error("daemon.json left after stop")
	}
}

package testenv_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/testenv"
)

var before = map[string]string{}

func TestMain(m *testing.M) {
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "GOCACHE"} {
		before[k] = os.Getenv(k)
	}
	// Plant the settings an owner's shell may hold: Main must drop them.
	os.Setenv("DEEPSEEK_API_KEY", "sk-owner-planted")
	os.Setenv("BRIDGE_STATE_DIR", "/owner/state")
	os.Setenv("BRIDGE_ENV_FILE", "/owner/.env")
	os.Setenv("PORT", "8787")
	os.Setenv("BRIDGE_APPROVALS_TEST_CHILD_X", "kept")
	os.Exit(testenv.Main(m))
}

// The process's HOME and XDG dirs are fresh dirs of its own, the owner's
// bridge settings are gone, the tests' own protocol variables stay, and the Go
// build cache stays where it was.
func TestMainIsolatesTheProcess(t *testing.T) {
	home := os.Getenv("HOME")
	if home == "" || home == before["HOME"] || !strings.Contains(home, "bridge-test-home-") {
		t.Fatalf("HOME = %q (was %q): not isolated", home, before["HOME"])
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"} {
		v := os.Getenv(k)
		if !strings.HasPrefix(v, home+string(filepath.Separator)) {
			t.Errorf("%s = %q, want inside HOME %q", k, v, home)
		}
		if st, err := os.Stat(v); err != nil || !st.IsDir() {
			t.Errorf("%s %q is not a dir: %v", k, v, err)
		}
	}
	for _, k := range []string{"DEEPSEEK_API_KEY", "BRIDGE_STATE_DIR", "BRIDGE_ENV_FILE", "PORT"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%q survived isolation", k, v)
		}
	}
	if v := os.Getenv("BRIDGE_APPROVALS_TEST_CHILD_X"); v != "kept" {
		t.Errorf("a test protocol variable was dropped: %q", v)
	}
	if gc := os.Getenv("GOCACHE"); gc == "" || strings.HasPrefix(gc, home) {
		t.Errorf("GOCACHE = %q: the build cache moved with HOME (was %q)", gc, before["GOCACHE"])
	}
}

func TestScrubbed(t *testing.T) {
	for name, want := range map[string]bool{
		"DEEPSEEK_API_KEY": true, "MCP_PATH_SECRET": true, "BRIDGE_SANDBOX": true, "HOST": true,
		"ANTHROPIC_BASE_URL": true, "CLAUDE_CONFIG_DIR": true,
		"BRIDGE_APPROVALS_TEST_CHILD_CONFIG": false, "PATH": false, "TMPDIR": false, "E2E_RACE": false, "HOSTNAME": false,
	} {
		if got := testenv.Scrubbed(name); got != want {
			t.Errorf("Scrubbed(%q) = %v, want %v", name, got, want)
		}
	}
}

// Binary builds once: a second ask returns the same file.
func TestBinaryBuildsOnce(t *testing.T) {
	testenv.Real(t, "go build")
	a := testenv.Binary(t, "./cmd/deepseek-double")
	b := testenv.Binary(t, "./cmd/deepseek-double")
	if a != b {
		t.Fatalf("two builds: %s, %s", a, b)
	}
	if st, err := os.Stat(a); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v", a, err)
	}
}

// A test binary that code under test starts as another program (the
// daemon's overlay probe runs its own executable as `jail-overlay`) says so
// and exits: it neither runs the tests again inside the probe nor leaves a
// temp HOME behind when the probe kills it (the daemon's tests had left one
// per daemon started, and waited for the probe's timeout each time).
func TestMainRefusesToRunAsAnotherProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(self, "jail-overlay", "--lower", "x")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `started as "jail-overlay", which it is not`) {
		t.Fatalf("run as jail-overlay: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "PASS") || strings.Contains(string(out), "=== RUN") {
		t.Errorf("the tests ran in it:\n%s", out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("it left %d entries in its temp dir: %v", len(left), left)
	}
}

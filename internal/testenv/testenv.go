// Package testenv is what every test of the module stands on: a test process
// that cannot reach the bridge of whoever runs it (its own HOME, XDG dirs and
// state dir, no per-user .env, none of the owner's DEEPSEEK_*, BRIDGE_* or
// MCP_* settings), the module's root, binaries built once per test process,
// and the real parts (the pinned Claude Code, bubblewrap) that -short skips.
//
// Every package with tests calls Main from its TestMain
// (TestEveryTestMainIsolates in the root package fails when one does not):
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scrubbedPrefixes are the settings of the bridge (and of the harness it runs)
// a test process never inherits: the owner's own, which a test would
// otherwise read as its configuration.
var scrubbedPrefixes = []string{"DEEPSEEK_", "BRIDGE_", "MCP_", "ANTHROPIC_", "CLAUDE_"}

// scrubbedNames are the bridge's settings without one of those prefixes.
var scrubbedNames = []string{"HOST", "PORT", "RATE_LIMIT_PER_MINUTE"}

// Scrubbed reports whether Main removes the variable name from the test
// process's environment. Names with "_TEST" in them are the tests' own
// protocol (a child told what to be) and are kept.
func Scrubbed(name string) bool {
	if strings.Contains(name, "_TEST") {
		return false
	}
	for _, n := range scrubbedNames {
		if name == n {
			return true
		}
	}
	for _, p := range scrubbedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Main isolates the test process (Isolate), runs the tests, removes what it
// made, and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		// Code under test starts its own executable as another program (the
		// daemon runs `bridge jail-overlay` to probe its overlay): a test
		// binary is not that program, and running the tests in it instead
		// would run them again inside the probe, and leave its temp dir
		// behind when the probe kills it.
		fmt.Fprintf(os.Stderr, "testenv: this test binary was started as %q, which it is not; its tests do not run there\n", os.Args[1])
		return 2
	}
	cleanup, err := Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 2
	}
	code := m.Run()
	cleanup()
	return code
}

// base is the process's private directory: the isolated HOME and XDG dirs, and
// the binaries Binary builds.
var (
	baseMu sync.Mutex
	base   string
)

// Isolate points HOME and the XDG dirs of this process at a fresh temp dir,
// removes the bridge's settings from its environment (Scrubbed), and keeps the
// Go toolchain's caches where they were (a test that runs `go build` still
// finds a warm cache). Every child a test starts inherits all of it. The
// returned func removes the temp dir.
func Isolate() (func(), error) {
	goEnv := goEnvironment()
	dir, err := os.MkdirTemp("", "bridge-test-home-")
	if err != nil {
		return nil, err
	}
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if Scrubbed(name) {
			os.Unsetenv(name)
		}
	}
	for name, sub := range map[string]string{
		"HOME":            "home",
		"XDG_CONFIG_HOME": "home/.config",
		"XDG_STATE_HOME":  "home/.local/state",
		"XDG_DATA_HOME":   "home/.local/share",
		"XDG_CACHE_HOME":  "home/.cache",
		"XDG_RUNTIME_DIR": "run",
	} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		os.Setenv(name, p)
	}
	for k, v := range goEnv {
		os.Setenv(k, v)
	}
	baseMu.Lock()
	base = dir
	baseMu.Unlock()
	return func() {
		// Module caches are read-only; nothing of them lives here, but a test
		// may have left a read-only dir: make it removable first.
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		os.RemoveAll(dir)
	}, nil
}

// goEnvironment is where the Go toolchain keeps its caches and settings as
// seen before Isolate moves HOME, so `go build` in a test stays warm and keeps
// the owner's `go env -w` settings.
func goEnvironment() map[string]string {
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "go", append([]string{"env", "-json"}, names...)...).Output()
	if err == nil && json.Unmarshal(b, &out) == nil {
		for k, v := range out {
			if v == "" {
				delete(out, k)
			}
		}
		return out
	}
	// No go on PATH (a test binary run by hand): derive what go would.
	if v, err := os.UserCacheDir(); err == nil && os.Getenv("GOCACHE") == "" {
		out["GOCACHE"] = filepath.Join(v, "go-build")
	}
	if v, err := os.UserConfigDir(); err == nil && os.Getenv("GOENV") == "" {
		out["GOENV"] = filepath.Join(v, "go", "env")
	}
	if v, err := os.UserHomeDir(); err == nil && os.Getenv("GOPATH") == "" {
		out["GOPATH"] = filepath.Join(v, "go")
	}
	return out
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// ModuleRoot is the directory holding the module's go.mod, found from the
// test's working directory (its package dir) upward.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/deepseek-mcp-bridge/deepseek-mcp-bridge\n") {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("no go.mod of deepseek-mcp-bridge above the test's directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return root
}

// Real skips the test under -short: it runs a real part (the pinned Claude
// Code, bubblewrap, a built binary) that `make check` leaves out.
func Real(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs %s: skipped under -short (make test runs it)", what)
	}
}

// ClaudeBin is the pinned Claude Code of scripts/install.sh. It skips under
// -short and fails, naming the fix, when the install is missing: `make test`
// installs it, so a missing binary is a broken setup, not a reason to pass.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	Real(t, "the real Claude Code")
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("the pinned Claude Code is installed for linux and darwin, not %s", runtime.GOOS)
	}
	p := filepath.Join(ModuleRoot(t), ".cache", "bin", "claude")
	abs, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatalf("the pinned Claude Code is not installed at %s: run scripts/install.sh claude (%v)", p, err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("%s is not an executable: run scripts/install.sh claude", abs)
	}
	return p
}

// Bwrap is bubblewrap's path. It skips under -short and fails, naming the
// fix, when bwrap is not installed.
func Bwrap(t testing.TB) string {
	t.Helper()
	Real(t, "bubblewrap")
	if runtime.GOOS != "linux" {
		t.Skip("bubblewrap is linux only")
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal("bubblewrap is not installed: run scripts/install.sh apt")
	}
	return p
}

// Build says how Binary builds a package.
type Build struct {
	Tags string // -tags
	Race bool   // -race
}

type built struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*built{}
)

// Binary is the path of the module's package pkg (a path from the module
// root such as "./cmd/bridge", or an import path) built once per test process
// and removed with it. Concurrent callers share one build.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	return BinaryWith(t, pkg, Build{})
}

// BinaryWith is Binary with build options.
func BinaryWith(t testing.TB, pkg string, b Build) string {
	t.Helper()
	mod := ModuleRoot(t)
	key := fmt.Sprintf("%s|%s|%v", pkg, b.Tags, b.Race)
	buildsMu.Lock()
	e := builds[key]
	if e == nil {
		e = &built{}
		builds[key] = e
	}
	n := len(builds)
	buildsMu.Unlock()
	e.once.Do(func() {
		dir, err := binDir()
		if err != nil {
			e.err = err
			return
		}
		name := filepath.Base(strings.TrimSuffix(pkg, "/"))
		if name == "." || name == ".." {
			name = "pkg"
		}
		// A dir per build keeps the package's own name: a binary that finds
		// its siblings by name (bridgectl → bridge) finds them once hard-linked
		// side by side (a symlink would not do: os.Executable resolves it).
		sub := filepath.Join(dir, strconv.Itoa(n))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			e.err = err
			return
		}
		out := filepath.Join(sub, name)
		if runtime.GOOS == "windows" {
			out += ".exe"
		}
		args := []string{"build", "-o", out}
		if b.Tags != "" {
			args = append(args, "-tags", b.Tags)
		}
		if b.Race {
			args = append(args, "-race")
		}
		args = append(args, pkg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		if msg, err := cmd.CombinedOutput(); err != nil {
			e.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, msg)
			return
		}
		e.path = out
	})
	if e.err != nil {
		t.Fatalf("build %s: %v", pkg, e.err)
	}
	return e.path
}

// binDir is where Binary puts what it builds: inside the process's private
// dir when Main made one, else a temp dir of its own.
func binDir() (string, error) {
	baseMu.Lock()
	defer baseMu.Unlock()
	if base == "" {
		d, err := os.MkdirTemp("", "bridge-test-bin-")
		if err != nil {
			return "", err
		}
		base = d
	}
	dir := filepath.Join(base, "bin")
	return dir, os.MkdirAll(dir, 0o755)
}

// ParentPID is pid's parent, from /proc/PID/stat; it skips where there is no
// /proc.
func ParentPID(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	return ppid
}

var (
	installMu sync.Mutex
	installed = map[string]string{} // name → the build it links
)

// Installed is the path of pkg's build (BinaryWith) under name in one dir
// of the process where every Installed binary stands side by side, as
// `make build` lays out bin/: bridgectl finds bridge next to itself, and a
// program given a --bin-dir finds its siblings. Hard links, not symlinks:
// os.Executable resolves a symlink, and the sibling would not be found.
func Installed(t testing.TB, name, pkg string, b Build) string {
	t.Helper()
	built := BinaryWith(t, pkg, b)
	dir, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "installed", name)
	installMu.Lock()
	defer installMu.Unlock()
	if prev, ok := installed[name]; ok {
		if prev != built {
			t.Fatalf("Installed %s: already linked to another build (%s, not %s)", name, prev, built)
		}
		return p
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(built, p); err != nil {
		t.Fatalf("link %s as %s: %v", built, p, err)
	}
	installed[name] = built
	return p
}

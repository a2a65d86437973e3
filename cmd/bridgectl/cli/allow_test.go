package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// A root that holds the bridge binary or the pinned Claude Code is
// allowed with a warning; one that holds the state dir or .env is warned
// about at start and in doctor.
func TestRootsHoldingProtectedPaths(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	bridgeBin := filepath.Join(proj, "bin", "bridge")
	claude := filepath.Join(proj, ".cache", "bin", "claude")
	for _, p := range []string{bridgeBin, claude} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 2.1.328\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(proj, "src"), 0o700)
	te := newTestEnv(t, "BRIDGE_BIN="+bridgeBin, "BRIDGE_CLAUDE_BIN="+claude)
	out, errs, code := te.run("allow", proj)
	if code != 0 || !strings.Contains(out, "allowed "+proj) {
		t.Fatalf("allow proj: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"warning", bridgeBin, "the bridge binary", claude, "Claude Code", "refuses " + proj, "subdirectories"} {
		if !strings.Contains(errs, want) {
			t.Errorf("allow of a root holding the binaries lacks %q:\n%s", want, errs)
		}
	}
	if _, errs, code := te.run("allow", filepath.Join(proj, "src")); code != 0 || strings.Contains(errs, "warning") {
		t.Errorf("allow proj/src: exit %d %q", code, errs)
	}

	// A hand-written root that holds the state dir and the .env: start and doctor say so.
	te2 := newTestEnv(t)
	te2.appendEnv("DEEPSEEK_ALLOWED_ROOTS=" + te2.dir)
	out, errs, code = te2.run("start")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"warning", te2.dir, "state dir", te2.envFile} {
		if !strings.Contains(errs, want) {
			t.Errorf("start with a root holding the state dir and .env lacks %q:\n%s", want, errs)
		}
	}
	out, _, _ = te2.run("doctor", "--dry")
	if !strings.Contains(out, "allowed root "+te2.dir+" contains the state directory") || !strings.Contains(out, "allowed root "+te2.dir+" contains the .env file "+te2.envFile) {
		t.Errorf("doctor with a root holding the state dir and .env:\n%s", out)
	}
}

// `allow` does not reload a daemon with unfinished jobs (it would
// interrupt them) unless --reload; reload, restart and stop name the jobs
// they interrupted.
func TestAllowKeepsJobsAndStopsNameInterruptedJobs(t *testing.T) {
	te := newTestEnv(t)
	projA, projB := filepath.Join(te.dir, "projects", "a"), filepath.Join(te.dir, "projects", "b")
	for _, d := range []string{projA, projB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	te.must("start")
	pid := te.daemonPID()
	t0 := time.Now().Add(-time.Minute).UTC()
	ended := t0.Add(30 * time.Second)
	snap := func(id string, st jobs.Status, task string) jobs.Snapshot {
		s := jobs.Snapshot{Version: jobs.SnapshotVersion, ID: id, Status: st, Task: task, Workspace: projA, CreatedAt: t0, MaxSteps: 120}
		if st.Final() {
			s.EndedAt = &ended
		}
		return s
	}
	running := snap("a1b2c3d4e5f6"+strings.Repeat("1", 20), jobs.StatusRunning, "reverse witness.txt "+eraseLine)
	waiting := snap("a1b2c3d4e5f6"+strings.Repeat("2", 20), jobs.StatusWaitingApproval, "deploy the site")
	queued := snap("a1b2c3d4e5f6"+strings.Repeat("3", 20), jobs.StatusQueued, "later")
	done := snap("a1b2c3d4e5f6"+strings.Repeat("4", 20), jobs.StatusDone, "finished long ago")
	te.writeJobs(running, waiting, queued, done)

	// allow with unfinished jobs: .env written, no reload, the jobs named.
	out, errs, code := te.run("allow", projA)
	if code != 0 {
		t.Fatalf("allow with running jobs: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"allowed " + projA, "NOT reloaded", "3 jobs are not finished",
		"a1b2c3d4e5f6  running", "a1b2c3d4e5f6  waiting_approval", "a1b2c3d4e5f6  queued", "reverse witness.txt benign\\u{1b}[2K fake line", "deploy the site",
		"`bridgectl reload` when they are done", "allow with --reload, interrupts them"} {
		if !strings.Contains(out, want) {
			t.Errorf("allow with unfinished jobs lacks %q:\n%s", want, out)
		}
	}
	noRawControls(t, "allow", out+errs)
	if strings.Contains(out, "reloaded: pid") || strings.Contains(out, "finished long ago") {
		t.Errorf("allow reloaded, or named a finished job:\n%s", out)
	}
	if te.daemonPID() != pid {
		t.Errorf("allow restarted the daemon: pid %d → %d", pid, te.daemonPID())
	}
	if st := te.jobStatus(running.ID); st != jobs.StatusRunning {
		t.Errorf("allow interrupted a job: %s", st)
	}
	if env, _ := os.ReadFile(te.envFile); !strings.Contains(string(env), "DEEPSEEK_ALLOWED_ROOTS="+projA) {
		t.Errorf(".env lacks the new root:\n%s", env)
	}

	// reload interrupts them and says which.
	out = te.must("reload")
	for _, want := range []string{"reloaded: pid", "interrupted 3 jobs", "a1b2c3d4e5f6  running", "a1b2c3d4e5f6  waiting_approval", "a1b2c3d4e5f6  queued", "deploy the site"} {
		if !strings.Contains(out, want) {
			t.Errorf("reload lacks %q:\n%s", want, out)
		}
	}
	noRawControls(t, "reload", out)
	if strings.Contains(out, "finished long ago") {
		t.Errorf("reload names a job that had ended before:\n%s", out)
	}
	for _, s := range []jobs.Snapshot{running, waiting, queued} {
		if st := te.jobStatus(s.ID); st != jobs.StatusInterrupted {
			t.Errorf("job %s after reload: %s", s.ID, st)
		}
	}

	// allow --reload reloads anyway and names what it interrupted.
	te.writeJobs(snap("b0b0b0b0b0b0"+strings.Repeat("5", 20), jobs.StatusRunning, "one more"))
	pid = te.daemonPID()
	out = te.must("allow", projB, "--reload")
	for _, want := range []string{"allowed " + projB, "reloaded: pid", "interrupted 1 job:", "b0b0b0b0b0b0  running", "one more"} {
		if !strings.Contains(out, want) {
			t.Errorf("allow --reload lacks %q:\n%s", want, out)
		}
	}
	if te.daemonPID() == pid {
		t.Errorf("allow --reload did not reload")
	}

	// No unfinished job: allow reloads as before, and nothing was interrupted.
	out = te.must("allow", "--remove", projB)
	if !strings.Contains(out, "reloaded: pid") || strings.Contains(out, "interrupted") || strings.Contains(out, "NOT reloaded") {
		t.Errorf("allow --remove without jobs:\n%s", out)
	}

	// restart and stop name the jobs they interrupt, too.
	te.writeJobs(snap("c0c0c0c0c0c0"+strings.Repeat("6", 20), jobs.StatusRunning, "restart victim"))
	out = te.must("restart")
	if !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, "c0c0c0c0c0c0  running           restart victim") || !strings.Contains(out, "started: pid") {
		t.Errorf("restart:\n%s", out)
	}
	te.writeJobs(snap("d0d0d0d0d0d0"+strings.Repeat("7", 20), jobs.StatusWaitingApproval, "stop victim"))
	out = te.must("stop")
	if !strings.Contains(out, "daemon stopped") || !strings.Contains(out, "interrupted 1 job:") || !strings.Contains(out, "d0d0d0d0d0d0  waiting_approval  stop victim") {
		t.Errorf("stop:\n%s", out)
	}
	// Nothing running: nothing interrupted, and allow says when it applies.
	if out := te.must("stop"); strings.Contains(out, "interrupted") {
		t.Errorf("stop with nothing running:\n%s", out)
	}
	if out := te.must("allow", projB); !strings.Contains(out, "the daemon is not running") {
		t.Errorf("allow without a daemon:\n%s", out)
	}

	for _, cmd := range []string{"allow", "reload", "restart", "stop"} {
		if out := te.must(cmd, "--help"); !strings.Contains(out, "interrupted") {
			t.Errorf("%s --help does not say what happens to running jobs:\n%s", cmd, out)
		}
	}
	if out := te.must("allow", "--help"); !strings.Contains(out, "--reload") {
		t.Errorf("allow --help lacks --reload:\n%s", out)
	}
}

// mkdirs creates directories under te.dir and returns their paths.
func (te *testEnv) mkdirs(rels ...string) []string {
	te.t.Helper()
	var out []string
	for _, rel := range rels {
		p := filepath.Join(te.dir, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			te.t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// setBridgectlPath sets the PATH bridgectl runs with (and hands a daemon it starts).
func (te *testEnv) setBridgectlPath(dirs ...string) {
	te.environ = append(te.environ, "PATH="+strings.Join(dirs, string(os.PathListSeparator)))
}

// setDaemonPath makes the running daemon's daemon.json record path as its PATH.
func (te *testEnv) setDaemonPath(path string) {
	te.t.Helper()
	var info map[string]any
	if err := json.Unmarshal([]byte(te.readFile("daemon.json")), &info); err != nil {
		te.t.Fatal(err)
	}
	info["path"] = path
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(te.state, "daemon.json"), b, 0o600); err != nil {
		te.t.Fatal(err)
	}
}

// pathWarned is the warning about root holding d, a directory on whose PATH.
func pathWarned(d, whose string) string {
	return "a job in this root could write a program into " + d + ", which is on " + whose + "; the bridge drops " + d +
		" from its harness's PATH, but the daemon and your own shell still run what is there — remove it from the PATH the daemon starts with"
}

const (
	ownPath    = "your PATH (the one `bridgectl start` hands the daemon)"
	daemonPath = "the daemon's PATH"
)

// `allow DIR` warns, and still allows, when DIR holds a directory on the
// daemon's PATH (a project's .venv/bin, also through a link from outside):
// bridgectl's own PATH while no daemon runs, the running daemon's once one
// does.
func TestAllowWarnsAboutARootHoldingADaemonPathDir(t *testing.T) {
	te := newTestEnv(t)
	dirs := te.mkdirs("projects/a/.venv/bin", "projects/b/tools", "projects/c/.venv/bin", "projects/d/.venv/bin", "projects/plain")
	venvA, toolsB, venvC, venvD := dirs[0], dirs[1], dirs[2], dirs[3]
	projA, projB, projC, projD, plain := filepath.Dir(filepath.Dir(venvA)), filepath.Dir(toolsB), filepath.Dir(filepath.Dir(venvC)), filepath.Dir(filepath.Dir(venvD)), dirs[4]
	link := filepath.Join(te.dir, "linkbin") // outside every root, into b
	if err := os.Symlink(toolsB, link); err != nil {
		t.Fatal(err)
	}
	te.setBridgectlPath(venvA, link, venvD, "/usr/bin", "/bin")

	for _, tc := range []struct{ root, warned string }{{projA, venvA}, {projB, link}} {
		out, errs, code := te.run("allow", tc.root)
		if code != 0 || !strings.Contains(out, "allowed "+tc.root) {
			t.Fatalf("allow %s: exit %d\n%s%s", tc.root, code, out, errs)
		}
		if want := "warning: " + tc.root + ": " + pathWarned(tc.warned, ownPath) + "\n"; !strings.Contains(errs, want) {
			t.Errorf("allow %s lacks\n%s\nstderr:\n%s", tc.root, want, errs)
		}
		if strings.Count(errs, "a job in this root could write") != 1 {
			t.Errorf("allow %s warns about another PATH directory:\n%s", tc.root, errs)
		}
	}
	if env, _ := os.ReadFile(te.envFile); !strings.Contains(string(env), "DEEPSEEK_ALLOWED_ROOTS="+projA+string(os.PathListSeparator)+projB+"\n") {
		t.Errorf(".env lacks the roots:\n%s", env)
	}
	if _, errs, code := te.run("allow", plain); code != 0 || strings.Contains(errs, "warning") {
		t.Errorf("allow of a root that holds no PATH directory: exit %d %q", code, errs)
	}

	// A running daemon: its PATH is what counts, not bridgectl's.
	te.must("start")
	te.setDaemonPath(venvC + string(os.PathListSeparator) + "/usr/bin")
	if _, errs, code := te.run("allow", projD); code != 0 || strings.Contains(errs, "a job in this root could write") {
		t.Errorf("allow %s, on bridgectl's PATH but not the daemon's: exit %d %q", projD, code, errs)
	}
	te.setDaemonPath(venvC + string(os.PathListSeparator) + "/usr/bin") // the reload wrote a new daemon.json
	out, errs, code := te.run("allow", projC)
	if want := "warning: " + projC + ": " + pathWarned(venvC, daemonPath) + "\n"; code != 0 || !strings.Contains(errs, want) || !strings.Contains(out, "allowed "+projC) {
		t.Errorf("allow %s with a daemon whose PATH holds %s: exit %d, want\n%s\nstdout:\n%s\nstderr:\n%s", projC, venvC, code, want, out, errs)
	}
}

// A directory whose name holds ";" cannot be a root: ";" separates the
// roots, as in the TypeScript bridge.
func TestAllowRefusesASemicolonInTheName(t *testing.T) {
	te := newTestEnv(t)
	dir := filepath.Join(te.dir, "a;b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, errs, code := te.run("allow", dir)
	if code == 0 || !strings.Contains(errs, `which separate DEEPSEEK_ALLOWED_ROOTS`) {
		t.Fatalf("allow %s: exit %d %q", dir, code, errs)
	}
}

// A root typed with ~ (at setup's prompt, or quoted) is the home's, not a
// directory named "~" in the working directory.
func TestAllowExpandsTheHome(t *testing.T) {
	te := newTestEnv(t)
	home := filepath.Join(te.dir, "home")
	proj := filepath.Join(home, "src", "myproject")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	te.environ = append(te.environ, "HOME="+home)
	out, errs, code := te.run("allow", "~/src/myproject")
	real, _ := filepath.EvalSymlinks(proj)
	if code != 0 || !strings.Contains(out, "allowed "+real) {
		t.Fatalf("allow ~/src/myproject: exit %d\n%s%s", code, out, errs)
	}
}

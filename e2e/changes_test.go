package e2e

// End-to-end tests of the record of a job's changes (package changes),
// which the daemon takes and compares outside every sandbox: it reads
// nothing outside the workspace however a job reshapes it, and runs no
// program a job planted.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dt "github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// At a job's end the daemon, outside every sandbox, reads each created or
// modified file of the workspace for the job's diff. A second job in the
// same workspace swaps a directory and a link to a dir outside every root
// back and forth; the first job's diff, which its caller reads, must never
// hold a file of the owner's home (any name not on the secret list: a gh
// token file, ~/.aws/credentials, the state dir's owner.token) read through
// the link. Careless: approval off; the caller retries with jobs that only
// answer.
func TestJobDiffNeverReadsTheHomeThroughASwappedDirectory(t *testing.T) {
	t.Parallel()
	g := startCarelessBridge(t, "off", map[string]string{"BRIDGE_MAX_CONCURRENT": "2", "BRIDGE_SYNC_WINDOW_MS": "500", "BRIDGE_WORKSPACE_LOCK": "off"})
	ws := g.workspace(t, nil)
	gh := filepath.Join(g.home, ".config", "gh")
	if err := os.MkdirAll(gh, 0o700); err != nil {
		t.Fatal(err)
	}
	canary := "gh-token-canary-" + randomWitness(t)
	if err := os.WriteFile(filepath.Join(gh, "hosts.yml"), []byte("github.com:\n  oauth_token: "+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	swap := fmt.Sprintf(`python3 -c "
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir('d'); open('d/hosts.yml', 'w').write('harmless\n')
os.symlink('%s', 'd.link')
t = time.time()
while time.time() - t < 120 and not os.path.exists('stop'):
    libc.renameat2(-100, b'd', -100, b'd.link', 2)
    if not os.path.islink('d'):
        os.utime('d/hosts.yml')
if os.path.islink('d'):
    libc.renameat2(-100, b'd', -100, b'd.link', 2)
print('LOOP-ENDED')
"`, gh)
	g.d.ScriptAnthropic(dt.ToolCalls(bash(swap)), dt.Text("swapped"))
	cs := goSDKClient(t, g.URL())
	first := startJob(t, cs, "Swap.", ws)
	// The job writes into its overlay: the swaps happen in its upper dir
	// (and in the workspace when no overlay can be had).
	upper := filepath.Join(g.dir().ChangesDir(first.P.JobID), "upper")
	if !poll.Until(jobLimit, func() bool {
		_, err := os.Lstat(filepath.Join(ws, "d.link"))
		_, err2 := os.Lstat(filepath.Join(upper, "d.link"))
		return err == nil || err2 == nil
	}) {
		c := waitSettled(t, cs, first.P.JobID, jobLimit)
		t.Fatalf("the swapping job did not start its loop: %s: %s", c.P.Status, c.Text)
	}
	defer func() {
		// Its own diff, once it is cancelled, holds no byte of the home either.
		callAgent(t, t.Context(), cs, "deepseek_agent_cancel", map[string]any{"job_id": first.P.JobID}, nil)
		c := waitSettled(t, cs, first.P.JobID, jobLimit)
		if strings.Contains(c.P.Diff, canary) || strings.Contains(c.Text, canary) {
			t.Errorf("the swapping job's own diff holds the owner's gh token from the home:\n%s", c.P.Diff)
		}
	}()
	// Bounded for the suite's time: the unit tests of sandbox.Tree and
	// changes.Compare prove the mechanism; before it, a leak came within
	// the first few attempts.
	for i := 0; i < swapAttempts; i++ {
		g.d.ScriptAnthropic(dt.Text("nothing to do"))
		c := startJob(t, cs, "Answer.", ws)
		c = waitSettled(t, cs, c.P.JobID, jobLimit)
		if strings.Contains(c.P.Diff, canary) || strings.Contains(c.Text, canary) {
			t.Fatalf("attempt %d: the job's diff, in its caller's payload, holds the owner's gh token from the home:\n%s", i+1, c.P.Diff)
		}
	}
}

// swapAttempts is how many jobs race a swapping job in the swap tests.
const swapAttempts = 12

// The daemon runs git outside every sandbox for the record of a job's
// changes in a git work tree. A PATH entry of the daemon inside a workspace
// (an activated .venv/bin) lets a job plant a `git` there; the daemon finds
// git only on its PATH without the dirs a job can write, so the planted one
// never runs — not at the first job's end, not at the next job's start.
func TestChangesNeverRunAGitPlantedOnThePath(t *testing.T) {
	t.Parallel()
	m := newMarkers(t)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git: %v", err)
	}
	root := t.TempDir()
	ws := filepath.Join(root, "ws-venv")
	if err := os.MkdirAll(filepath.Join(ws, ".venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start"}} {
		cmd := exec.Command(realGit, args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	g := startBoundaryBridge(t, "on", map[string]string{
		"DEEPSEEK_ALLOWED_ROOTS": root,
		"PATH":                   filepath.Join(ws, ".venv", "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
	})
	fake := "#!/bin/sh\necho \"$@\" >> " + m.path("git") + "\nexec " + realGit + " \"$@\"\n"
	script := fmt.Sprintf("import os\np = os.path.join('.venv', 'bin', 'git')\nwith open(p, 'w') as f:\n    f.write(%q)\nos.chmod(p, 0o755)\nprint('wrote', p)\nopen('a.txt', 'a').write('two\\n')\n", fake)
	c, _ := runScripted(t, g, ws, []dt.ToolCall{
		writeCall(filepath.Join(ws, "setup.py"), script),
		bash("python3 setup.py"),
	})
	// The job's git is held back (a dot-folder); the owner promotes it, so
	// that the daemon's own PATH search is what is tested.
	checkHeld(t, c.P, ws, ".venv/bin/git")
	g.promote(t, c.P.JobID, ".venv/bin/git")
	if b, err := os.ReadFile(filepath.Join(ws, ".venv", "bin", "git")); err != nil || string(b) != fake {
		t.Fatalf("control: .venv/bin/git is not the job's after --promote (%v)", err)
	}
	// Control: git was asked (a.txt's old contents came from its blob).
	if !strings.Contains(c.P.Diff, "+two") {
		t.Errorf("job 1's diff lacks its change to a.txt:\n%s", c.P.Diff)
	}
	ran := func() string { b, _ := os.ReadFile(m.path("git")); m.take(t); return strings.TrimSpace(string(b)) }
	if r := ran(); r != "" {
		t.Errorf("job 1: the daemon ran the git the job planted, outside every sandbox: %q", r)
	}
	runScripted(t, g, ws, []dt.ToolCall{bash("echo second job")})
	if r := ran(); r != "" {
		t.Errorf("job 2: the daemon ran the git the job planted, outside every sandbox: %q", r)
	}
}

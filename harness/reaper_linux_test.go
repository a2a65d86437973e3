//go:build linux

package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanBody starts a process that leaves the job's group (setsid) and drops
// the job's marker (env -i) — what BRIDGE_SANDBOX=off lets a command do —,
// records its pid, and ends the harness.
// (The escapee writes its own pid: setsid may fork, so $! is not it.)
const orphanBody = "SLEEP=$(command -v sleep)\n" +
	"setsid env -i /bin/sh -c \"echo \\$\\$ > orphan.pid.tmp && mv orphan.pid.tmp orphan.pid && exec $SLEEP 300\" </dev/null >/dev/null 2>&1 &\n" +
	"while [ ! -s orphan.pid ]; do sleep 0.01; done\n" +
	"echo '" + initLine + "'\necho '" + resultLine + "'\nexit 0"

// The escapee is killed when its job ends if the process is a subreaper, as
// bridge serve is. The case runs in a child process of the test binary, so
// no other test runs under a subreaper.
func TestSubreaperKillsOrphansThatDroppedTheMarker(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	for _, c := range []struct {
		name      string
		subreaper bool
		survives  bool
	}{
		{"subreaper", true, false},
		{"no subreaper (what the marker scan and group kill alone leave)", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReaperChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HARNESS_REAPER_CHILD="+ws, "HARNESS_REAPER_SUBREAPER="+strconv.FormatBool(c.subreaper))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			b, err := os.ReadFile(filepath.Join(ws, "orphan.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				t.Fatalf("orphan pid %q", b)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			alive := sleeperAlive(pid)
			if alive != c.survives {
				t.Fatalf("orphan %d alive = %v after its job ended, want %v\n%s", pid, alive, c.survives, out)
			}
		})
	}
}

// sleeperAlive: pid is a live (not zombie) `sleep` — not a recycled pid.
func sleeperAlive(pid int) bool {
	d := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return err == nil && filepath.Base(argv0) == "sleep" && !isZombie(d)
}

// TestReaperChild is the body run in the child process.
func TestReaperChild(t *testing.T) {
	ws := os.Getenv("HARNESS_REAPER_CHILD")
	if ws == "" {
		t.Skip("run by TestSubreaperKillsOrphansThatDroppedTheMarker")
	}
	if os.Getenv("HARNESS_REAPER_SUBREAPER") == "true" {
		if err := BecomeSubreaper(); err != nil {
			t.Fatal(err)
		}
	}
	c := &ClaudeCode{Bin: fakeClaude(t, orphanBody), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	spec := testSpec(t, "job-reaper")
	spec.Workspace = ws
	r, err := c.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, exit := collect(t, r, 10*time.Second); exit.Code != 0 {
		t.Fatalf("exit %+v", exit)
	}
}

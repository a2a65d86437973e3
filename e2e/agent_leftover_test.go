package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// agentStates are the state dirs of every agent bridge this run started
// (startAgentBridge); every Claude Code process a test started, and the
// approval child it spawns, names one of them (CLAUDE_CONFIG_DIR, --config).
var agentStates struct {
	mu   sync.Mutex
	dirs []string
}

func registerAgentState(dir string) {
	agentStates.mu.Lock()
	defer agentStates.mu.Unlock()
	agentStates.dirs = append(agentStates.dirs, filepath.Join(dir, "harness")+string(filepath.Separator))
}

// leftoverJobProcesses lists the live processes (not zombies) whose
// environment or command line names a harness dir of this run: a Claude
// Code, an approval child or a command a job ran. After the whole suite there
// must be none — TestMain fails the run otherwise.
func leftoverJobProcesses() []string {
	agentStates.mu.Lock()
	dirs := append([]string(nil), agentStates.dirs...)
	agentStates.mu.Unlock()
	if len(dirs) == 0 {
		return nil
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range procs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(d, "environ"))
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		for _, dir := range dirs {
			if bytes.Contains(env, []byte(dir)) || bytes.Contains(cmdline, []byte(dir)) {
				out = append(out, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")))
				break
			}
		}
	}
	return out
}

// checkNoLeftoverJobProcesses is TestMain's last word: it reports (and
// kills) every process of this run's jobs still alive, and says whether
// there were none.
func checkNoLeftoverJobProcesses() bool {
	left := leftoverJobProcesses()
	if len(left) == 0 {
		return true
	}
	fmt.Fprintf(os.Stderr, "e2e: %d processes of this run's agent jobs outlived the suite:\n  %s\n", len(left), strings.Join(left, "\n  "))
	for _, l := range left {
		var pid int
		if _, err := fmt.Sscanf(l, "pid %d:", &pid); err == nil && pid > 1 {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
	return false
}

// The suite-wide check finds a process of a registered state dir's job by
// its environment, and forgets it once it is gone.
func TestAgentLeftoverScanFindsJobProcesses(t *testing.T) {
	state := t.TempDir()
	registerAgentState(state)
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + filepath.Join(state, "harness", strings.Repeat("a", 32))}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }() // owner: this test
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	want := fmt.Sprintf("pid %d: sleep 60", cmd.Process.Pid)
	if left := leftoverJobProcesses(); !slices.Contains(left, want) {
		t.Fatalf("leftovers %v lack %q", left, want)
	}
	cmd.Process.Kill()
	<-waited
	for _, l := range leftoverJobProcesses() {
		if l == want {
			t.Fatalf("a reaped process is still reported: %s", l)
		}
	}
}

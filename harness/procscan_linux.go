//go:build linux

package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// JobProcesses lists the pids of live processes whose environment carries the
// job's marker (BRIDGE_JOB_ID=jobID): the whole tree a job's harness started,
// including anything that left its process group.
func JobProcesses(jobID string) []int {
	if jobID == "" {
		return nil
	}
	marker := []byte("BRIDGE_JOB_ID=" + jobID + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)) {
			if !isZombie(d) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func isZombie(procDir string) bool {
	b, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return true
	}
	// state is the field after the parenthesised command name
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

// KillJobProcesses sends SIGKILL to every process carrying the job's marker
// and returns how many it signalled (a restarted daemon uses it to clear the
// tree of a job that was running when the previous daemon died).
func KillJobProcesses(jobID string) int {
	pids := JobProcesses(jobID)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

//go:build linux

package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// JobProcesses lists the pids of live processes whose environment carries the
// job's marker (BRIDGE_JOB_ID=jobID): the whole tree a job's harness started,
// including anything that left its process group. It reads every process
// of the machine (a restarted daemon's jobs are not below it).
func JobProcesses(jobID string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return marked(jobID, pids)
}

// killJobDescendants SIGKILLs the processes below this one that carry the
// job's marker, and returns how many: when this process is a subreaper (bridge
// serve), a job's processes are always below it, so the end of a job reads its
// own tree, not the machine's. Otherwise an orphan is re-parented elsewhere
// (init), and every process is read, as it is where the kernel lists no
// children.
func killJobDescendants(jobID string) int {
	pids, ok := descendants()
	if !ok || !subreaper.Load() {
		return KillJobProcesses(jobID)
	}
	pids = marked(jobID, pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// maxDescendants bounds the walk of this process's tree.
const maxDescendants = 1 << 16

// descendants are the pids below this process (its children, theirs, …),
// from /proc/<pid>/task/<tid>/children; ok is false when the kernel keeps no
// such lists (CONFIG_PROC_CHILDREN) or the tree is past maxDescendants.
func descendants() (pids []int, ok bool) {
	self := os.Getpid()
	if !childrenListed() {
		return nil, false
	}
	queue := []int{self}
	seen := map[int]bool{self: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children(pid) {
			if seen[c] {
				continue
			}
			if len(seen) > maxDescendants {
				return nil, false
			}
			seen[c] = true
			pids = append(pids, c)
			queue = append(queue, c)
		}
	}
	return pids, true
}

// childrenListed reports whether the kernel lists each task's children
// (CONFIG_PROC_CHILDREN).
func childrenListed() bool {
	self := os.Getpid()
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", self, self))
	return err == nil
}

// children are pid's children, over all its threads.
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/children", pid))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(w)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// marked are those of pids whose environment carries the job's marker and
// that are not zombies (this process left out).
func marked(jobID string, pids []int) []int {
	if jobID == "" {
		return nil
	}
	marker := []byte("BRIDGE_JOB_ID=" + jobID + "\x00")
	var out []int
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		d := "/proc/" + strconv.Itoa(pid)
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)) {
			if !isZombie(d) {
				out = append(out, pid)
			}
		}
	}
	return out
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

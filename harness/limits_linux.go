//go:build linux

package harness

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// LimitsHeldBy says how a job's Limits are held here: by the daemon's
// watcher, which reads /proc. Inside the jail each job has its own PID
// namespace, so a process it leaves behind stays in its tree (its
// namespace's init takes it) and dies with it.
const LimitsHeldBy = "the daemon's watcher over each job's process tree (its own PID namespace in the jail)"

var (
	// limitTick is how often the watcher reads the process table.
	limitTick = 200 * time.Millisecond
	// diskFloor is the shortest pause between two walks of a job's disk;
	// a walk that takes long waits twenty times its length, so the walks
	// take at most a twentieth of a core.
	diskFloor = 250 * time.Millisecond
	pageSize  = int64(os.Getpagesize())
)

// watched is one run under the watcher.
type watched struct {
	root   int
	limits Limits
	once   sync.Once
	breach func(Breach)
	done   chan struct{}
}

// pass ends a run past a bound, once: SIGKILL to every process of its tree
// as last seen, then the run's own word (its group).
func (w *watched) pass(b Breach, pids []int) {
	w.once.Do(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		w.breach(b)
	})
}

var limitWatch struct {
	mu      sync.Mutex
	runs    map[*watched]bool
	running bool
}

// watchLimits holds l over the process tree of root until stop is called;
// once a bound is passed, the tree is killed and breach is called, once.
func watchLimits(root int, l Limits, breach func(Breach)) (stop func()) {
	if !l.Held() {
		return func() {}
	}
	w := &watched{root: root, limits: l, breach: breach, done: make(chan struct{})}
	limitWatch.mu.Lock()
	if limitWatch.runs == nil {
		limitWatch.runs = map[*watched]bool{}
	}
	limitWatch.runs[w] = true
	if !limitWatch.running && (l.Processes > 0 || l.Memory > 0) {
		limitWatch.running = true
		go watchTrees() // owner: the watcher; ends once no run is watched
	}
	limitWatch.mu.Unlock()
	if l.Disk > 0 && len(l.DiskPaths) > 0 {
		go watchDisk(w) // owner: w; ends with stop
	}
	return func() {
		limitWatch.mu.Lock()
		defer limitWatch.mu.Unlock()
		if limitWatch.runs[w] {
			delete(limitWatch.runs, w)
			close(w.done)
		}
	}
}

// watchTrees reads the process table every limitTick, once for all the
// watched runs, while there are any.
func watchTrees() {
	t := time.NewTicker(limitTick)
	defer t.Stop()
	for range t.C {
		limitWatch.mu.Lock()
		var runs []*watched
		for w := range limitWatch.runs {
			if w.limits.Processes > 0 || w.limits.Memory > 0 {
				runs = append(runs, w)
			}
		}
		if len(runs) == 0 {
			limitWatch.running = false
			limitWatch.mu.Unlock()
			return
		}
		limitWatch.mu.Unlock()
		table := readProcTable()
		for _, w := range runs {
			checkTree(w, table)
		}
	}
}

// proc is one process as /proc/<pid>/stat says.
type proc struct {
	ppid    int
	threads int64
	rss     int64 // bytes
}

// procTable is every process's parent, thread count and resident size,
// and the children of each.
type procTable struct {
	procs    map[int]proc
	children map[int][]int
}

func readProcTable() procTable {
	ents, _ := os.ReadDir("/proc")
	t := procTable{procs: make(map[int]proc, len(ents)), children: make(map[int][]int, len(ents))}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			t.procs[pid] = p
			t.children[p.ppid] = append(t.children[p.ppid], pid)
		}
	}
	return t
}

// readStat parses /proc/<pid>/stat: after the command's ")", the fields
// from state (field 3) on; ppid is field 4, num_threads 20, rss 24.
func readStat(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	threads, err2 := strconv.ParseInt(string(f[17]), 10, 64)
	rss, err3 := strconv.ParseInt(string(f[21]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return proc{}, false
	}
	return proc{ppid: ppid, threads: threads, rss: rss * pageSize}, true
}

// checkTree counts w's tree in t and stops counting once a bound is
// passed.
func checkTree(w *watched, t procTable) {
	var tasks, rss int64
	var pids []int
	queue := []int{w.root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := t.procs[pid]
		if !ok {
			continue
		}
		pids = append(pids, pid)
		tasks += p.threads
		rss += p.rss
		switch l := w.limits; {
		case l.Processes > 0 && tasks > int64(l.Processes):
			w.pass(Breach{Bound: BoundProcesses, Seen: tasks, Limit: int64(l.Processes), At: time.Now()}, append(pids, queue...))
			return
		case l.Memory > 0 && rss > l.Memory:
			w.pass(Breach{Bound: BoundMemory, Seen: rss, Limit: l.Memory, At: time.Now()}, append(pids, queue...))
			return
		}
		queue = append(queue, t.children[pid]...)
	}
}

// watchDisk walks w's disk paths until stop, pausing between walks.
func watchDisk(w *watched) {
	for {
		began := time.Now()
		if used, over := diskUse(w.limits.DiskPaths, w.limits.Disk); over {
			w.pass(Breach{Bound: BoundDisk, Seen: used, Limit: w.limits.Disk, At: time.Now()}, nil)
			return
		}
		pause := max(diskFloor, 20*time.Since(began))
		t := time.NewTimer(pause)
		select {
		case <-w.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

var errOver = errors.New("over")

// diskUse sums the blocks allocated under paths, and stops once past limit.
func diskUse(paths []string, limit int64) (int64, bool) {
	var used int64
	for _, root := range paths {
		err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone, or unreadable: the walk goes on
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				used += st.Blocks * 512
			}
			if used > limit {
				return errOver
			}
			return nil
		})
		if errors.Is(err, errOver) {
			return used, true
		}
	}
	return used, false
}

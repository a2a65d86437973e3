//go:build linux

package harness

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LimitsHeldBy says how a job's Limits are held here: by the daemon's
// watcher, which reads /proc. Inside the jail each job has its own PID
// namespace, so a process it leaves behind stays in its tree (its
// namespace's init takes it) and dies with it.
const LimitsHeldBy = "the daemon's watcher over each job's process tree (its own PID namespace in the jail)"

var (
	// limitTick is how often the watcher reads the process table.
	limitTick = 250 * time.Millisecond
	// diskFloor is the shortest pause between two walks of a job's disk;
	// a walk that takes long waits twenty times its length, so the walks
	// take at most a twentieth of a core, but never more than diskCeiling.
	diskFloor   = 250 * time.Millisecond
	diskCeiling = 2 * time.Second
	pageSize    = int64(os.Getpagesize())
)

// watched is one run under the watcher.
type watched struct {
	root   int
	limits Limits
	// jailProc is the job's own /proc as the daemon reaches it: the one of
	// the mount namespace of its PID namespace's first process, the run's
	// own (/proc/<root>/root/proc); "" for a run with no namespace.
	jailProc string
	// started is the file the run's first process was started from (its
	// device and inode; ok false when unknown): while /proc/<root>/exe is
	// still that file, the process has not exec'd the jail yet (firstAlone).
	started struct {
		dev, ino uint64
		ok       bool
	}
	once   sync.Once
	breach func(Breach)
	done   chan struct{}
	// held is the memory the job holds outside its processes' RSS, as the
	// last disk walk found it (heldOpen), added to their RSS.
	held atomic.Int64
}

// pass ends a run past a bound, once: the run's own word (which records
// the breach and kills its group), then SIGKILL to every process of its
// tree as last seen.
func (w *watched) pass(b Breach, procs []procRef) {
	w.once.Do(func() {
		w.breach(b) // first: the run must know why before it sees its exit
		for _, p := range procs {
			p.kill()
		}
	})
}

// procRef is a process of a table read up to a tick ago: its pid and when
// it started, so a pid reused since is not the one killed.
type procRef struct {
	pid   int
	start int64
}

// kill sends SIGKILL through a pidfd, once the pid is seen to be the same
// process still (its start time); without pidfds, to the pid.
func (p procRef) kill() {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	var buf [1024]byte
	if now, ok := readStat([]byte("/proc/"+strconv.Itoa(p.pid)+"/stat"), buf[:]); ok && now.start == p.start {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

var limitWatch struct {
	mu      sync.Mutex
	runs    map[*watched]bool
	running bool
}

// watchLimits holds l over the process tree of root until stop is called;
// once a bound is passed, the tree is killed and breach is called, once.
// With ownPID the run is the first process of its own PID namespace
// (Spec.OwnPIDNamespace), whose /proc holds the job's processes alone; exe
// is the file it was started from.
func watchLimits(root int, exe string, l Limits, ownPID bool, breach func(Breach)) (stop func()) {
	if !l.Held() {
		return func() {}
	}
	w := &watched{root: root, limits: l, breach: breach, done: make(chan struct{})}
	if ownPID {
		w.jailProc = "/proc/" + strconv.Itoa(root) + "/root/proc"
		var st unix.Stat_t
		if unix.Stat(exe, &st) == nil {
			w.started.dev, w.started.ino, w.started.ok = st.Dev, st.Ino, true
		}
	}
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
	if l.Disk > 0 || l.Memory > 0 { // memory: what it holds outside its processes' RSS
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

// ownProc is the job's own /proc once it is mounted: a proc filesystem
// that is not the daemon's (another device), which holds the job's
// processes and nothing else. "" before the namespace's first process has
// mounted it, or with no namespace: the machine's table is read instead
// (unless the first process is still alone: firstAlone).
func (w *watched) ownProc(hostDev uint64) string {
	if w.jailProc == "" {
		return ""
	}
	var fs unix.Statfs_t
	var st unix.Stat_t
	if unix.Statfs(w.jailProc, &fs) != nil || fs.Type != unix.PROC_SUPER_MAGIC || unix.Stat(w.jailProc, &st) != nil || st.Dev == hostDev {
		return ""
	}
	return w.jailProc
}

// watchTrees reads the process table every limitTick, once for all the
// watched runs, while there are any: of the jail's own /proc for a run in a
// jail, whose processes are all the job's, else of the machine's, once for
// every other run.
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
		var host procTable
		var hostStat unix.Stat_t
		_ = unix.Stat("/proc", &hostStat)
		for _, w := range runs {
			if own := w.ownProc(hostStat.Dev); own != "" {
				checkAll(w, readProcTable(own))
				continue
			}
			if w.firstAlone() {
				checkAll(w, rootOnly(w.root))
				continue
			}
			if host.procs == nil {
				host = readProcTable("/proc")
			}
			checkTree(w, host)
		}
	}
}

// proc is one process as /proc/<pid>/stat says.
type proc struct {
	ppid    int
	threads int64
	start   int64 // clock ticks after boot
	rss     int64 // bytes
}

// procTable is every process's parent, thread count and resident size,
// and the children of each.
type procTable struct {
	procs    map[int]proc
	children map[int][]int
}

func readProcTable(root string) procTable {
	dir, err := os.Open(root)
	if err != nil {
		return procTable{}
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	t := procTable{procs: make(map[int]proc, len(names)), children: make(map[int][]int, len(names))}
	var buf [1024]byte
	path := make([]byte, 0, 32)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		path = append(append(append(append(path[:0], root...), '/'), name...), "/stat"...)
		if p, ok := readStat(path, buf[:]); ok {
			t.procs[pid] = p
			t.children[p.ppid] = append(t.children[p.ppid], pid)
		}
	}
	return t
}

// readStat parses /proc/<pid>/stat (path) read into buf: after the
// command's ")", the fields from state (field 3) on; ppid is field 4,
// num_threads 20, rss 24 (pages).
func readStat(path, buf []byte) (proc, bool) {
	fd, err := unix.Open(string(path), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return proc{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	var p proc
	field := 2 // the ")" ends field 2
	for rest := b[i+1:]; len(rest) > 0 && field < 24; {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		f := rest[:end]
		rest = rest[end:]
		field++
		switch field {
		case 4:
			p.ppid = atoi(f)
		case 20:
			p.threads = int64(atoi(f))
		case 22:
			p.start = int64(atoi(f))
		case 24:
			p.rss = int64(atoi(f)) * pageSize
			return p, true
		}
	}
	return proc{}, false
}

// atoi reads a non-negative decimal (anything else is 0).
func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// firstAlone reports whether a run in its own PID namespace is still its
// first process alone: that process has not exec'd the jail yet (its
// /proc/<root>/exe is still the file it was started from), and until then
// it forks nothing — it mounts the namespace's /proc and execs, or exits
// (sandbox.ProcMain, sandbox.OverlayMain). Reading the machine's table,
// which costs with every process the machine runs, would find nothing more
// then. Once it has exec'd, a /proc of its own that is not there (not yet,
// or no longer, whatever a job did to its mounts) sends the watchers back to
// the machine's table, never to the first process alone.
func (w *watched) firstAlone() bool {
	if w.jailProc == "" || !w.started.ok {
		return false
	}
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(w.root)+"/exe", &st) == nil && st.Dev == w.started.dev && st.Ino == w.started.ino
}

// rootOnly is the table of a run's first process alone (firstAlone).
func rootOnly(root int) procTable {
	var buf [1024]byte
	p, ok := readStat([]byte("/proc/"+strconv.Itoa(root)+"/stat"), buf[:])
	if !ok {
		return procTable{}
	}
	return procTable{procs: map[int]proc{root: p}, children: map[int][]int{p.ppid: {root}}}
}

// checkAll counts every process of t, the jail's own /proc, as w's. Its
// pids are the jail's, which mean nothing outside: the group's kill ends
// them (the jail's first process takes its PID namespace with it).
func checkAll(w *watched, t procTable) {
	tasks, rss := int64(0), w.held.Load()
	for _, p := range t.procs {
		tasks += p.threads
		rss += p.rss
		if w.over(tasks, rss, nil) {
			return
		}
	}
}

// over reports whether tasks or rss pass w's bounds, and if so ends w's
// run, with procs' killed first (nil: none).
func (w *watched) over(tasks, rss int64, procs func() []procRef) bool {
	var b Breach
	switch l := w.limits; {
	case l.Processes > 0 && tasks > int64(l.Processes):
		b = Breach{Bound: BoundProcesses, Seen: tasks, Limit: int64(l.Processes), At: time.Now()}
	case l.Memory > 0 && rss > l.Memory:
		b = Breach{Bound: BoundMemory, Seen: rss, Limit: l.Memory, At: time.Now()}
	default:
		return false
	}
	var refs []procRef
	if procs != nil {
		refs = procs()
	}
	w.pass(b, refs)
	return true
}

// checkTree counts w's tree in t, the machine's process table, and stops
// counting once a bound is passed.
func checkTree(w *watched, t procTable) {
	tasks, rss := int64(0), w.held.Load()
	var seen []int
	queue := []int{w.root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := t.procs[pid]
		if !ok {
			continue
		}
		seen = append(seen, pid)
		tasks += p.threads
		rss += p.rss
		if w.over(tasks, rss, func() []procRef { return t.refs(append(seen, queue...)) }) {
			return
		}
		queue = append(queue, t.children[pid]...)
	}
}

// tree is root and every process below it in t.
func (t procTable) tree(root int) []int {
	var pids []int
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		if _, ok := t.procs[queue[0]]; ok {
			pids = append(pids, queue[0])
			queue = append(queue, t.children[queue[0]]...)
		}
	}
	return pids
}

// refs are pids of t with their start times.
func (t procTable) refs(pids []int) []procRef {
	out := make([]procRef, 0, len(pids))
	for _, pid := range pids {
		if p, ok := t.procs[pid]; ok {
			out = append(out, procRef{pid: pid, start: p.start})
		}
	}
	return out
}

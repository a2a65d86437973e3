//go:build linux

package harness

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// watchDisk walks w's disk paths until stop, pausing between walks, and
// counts what the job holds besides: files it deleted but keeps open, and
// memory files and tmpfs mounts (held as memory, in w.held).
func watchDisk(w *watched) {
	for {
		began := time.Now()
		held := w.heldOpen()
		d := diskWalk{limit: w.limits.Disk, used: held.disk}
		if d.limit > 0 { // 0: no disk bound, only memory held outside RSS
			for _, p := range w.limits.DiskPaths {
				d.walk(p)
			}
			d.over = d.over || d.used > d.limit
		}
		w.held.Store(held.memory)
		switch {
		case d.over:
			w.pass(Breach{Bound: BoundDisk, Seen: d.used, Limit: w.limits.Disk, At: time.Now(), Why: d.why}, nil)
			return
		case w.limits.Memory > 0 && held.memory > w.limits.Memory:
			w.pass(Breach{Bound: BoundMemory, Seen: held.memory, Limit: w.limits.Memory, At: time.Now(), Why: "in memory files and tmpfs mounts"}, nil)
			return
		}
		pause := min(max(diskFloor, 20*time.Since(began)), diskCeiling)
		t := time.NewTimer(pause)
		select {
		case <-w.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// The bounds of one walk of a job's files: past either the job is over its
// disk bound, whatever the bytes (empty files use the host's inodes, and a
// walk that long would leave the job unchecked meanwhile).
var (
	maxDiskEntries = 1_000_000
	maxDiskDepth   = 2048
)

// diskWalk sums the blocks allocated under a tree, from directory
// descriptors (no path is ever longer than a name, so no depth hides a
// file), and stops once past its limit.
type diskWalk struct {
	limit   int64
	used    int64
	entries int
	over    bool
	why     string
}

func (d *diskWalk) walk(root string) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // not there (yet)
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		d.used += st.Blocks * 512
	}
	d.dir(fd, 0)
}

// dir counts what directory fd holds, and closes it.
func (d *diskWalk) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	if depth > maxDiskDepth {
		d.over, d.why = true, fmt.Sprintf("directories nested deeper than %d", maxDiskDepth)
		return
	}
	for !d.over {
		names, err := f.Readdirnames(512) // in the directory's order, a chunk at a time
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone since
			}
			d.used += st.Blocks * 512
			d.entries++
			switch {
			case d.used > d.limit:
				d.over = true
			case d.entries > maxDiskEntries:
				d.over, d.why = true, fmt.Sprintf("more than %d files", maxDiskEntries)
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				if child, ok := openChild(fd, name, st.Mode); ok {
					d.dir(child, depth+1)
				}
			}
			if d.over {
				return
			}
		}
		if err != nil {
			return // io.EOF, or the directory went away
		}
	}
}

// openChild opens directory name below fd without following a link; one
// the job made unreadable to its owner, the daemon, is given back its
// owner's access first (the job could otherwise hide what it holds there).
func openChild(fd int, name string, mode uint32) (int, bool) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	child, err := unix.Openat(fd, name, flags, 0)
	if errors.Is(err, unix.EACCES) && unix.Fchmodat(fd, name, mode&0o7777|0o700, 0) == nil {
		child, err = unix.Openat(fd, name, flags, 0)
	}
	return child, err == nil
}

// held is what a job holds outside the files its walk counts.
type held struct {
	disk   int64 // files it deleted but keeps open
	memory int64 // memory files (memfd) it keeps open, and its tmpfs mounts
}

// heldOpen counts, for the job's processes, the deleted files they keep
// open (by their descriptors) and the tmpfs mounts of their mount
// namespaces (what is in a tmpfs is memory no process's RSS shows: Claude
// Code's sandbox gives each command one). Each file and mount counts once.
func (w *watched) heldOpen() held {
	var h held
	procRoot, pids := w.jobPIDs()
	files := map[[2]uint64]bool{}
	mounts := map[uint64]bool{}
	tmpfsUse("/proc/self", mounts) // the daemon's own tmpfs mounts are the machine's, not the job's
	namespaces := map[string]bool{}
	for _, pid := range pids {
		dir := procRoot + "/" + strconv.Itoa(pid)
		if ents, err := os.ReadDir(dir + "/fd"); err == nil {
			for _, e := range ents {
				var st unix.Stat_t
				if unix.Stat(dir+"/fd/"+e.Name(), &st) != nil || st.Nlink != 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
					continue
				}
				if k := [2]uint64{st.Dev, st.Ino}; !files[k] {
					files[k] = true
					if isTmpfs(dir + "/fd/" + e.Name()) {
						h.memory += st.Blocks * 512
					} else {
						h.disk += st.Blocks * 512
					}
				}
			}
		}
		ns, err := os.Readlink(dir + "/ns/mnt")
		if err != nil || namespaces[ns] {
			continue
		}
		namespaces[ns] = true
		h.memory += tmpfsUse(dir, mounts)
	}
	return h
}

// jobPIDs are the job's processes, as pids of procRoot: its own /proc's,
// its first process alone before that has exec'd the jail (firstAlone),
// else the machine's tree below the run.
func (w *watched) jobPIDs() (procRoot string, pids []int) {
	var host unix.Stat_t
	_ = unix.Stat("/proc", &host)
	if own := w.ownProc(host.Dev); own != "" {
		t := readProcTable(own)
		for pid := range t.procs {
			pids = append(pids, pid)
		}
		return own, pids
	}
	if w.firstAlone() {
		return "/proc", []int{w.root}
	}
	return "/proc", readProcTable("/proc").tree(w.root)
}

func isTmpfs(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == unix.TMPFS_MAGIC
}

// tmpfsUse sums the bytes in use of the tmpfs mounts that the process at
// dir (a /proc/<pid>) sees, each device once: one in seen is not counted,
// and each counted is added to it.
func tmpfsUse(dir string, seen map[uint64]bool) int64 {
	b, err := os.ReadFile(dir + "/mountinfo")
	if err != nil {
		return 0
	}
	var used int64
	for line := range strings.SplitSeq(string(b), "\n") {
		// id parent major:minor root mountpoint options ... - fstype source super
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) || f[sep+1] != "tmpfs" {
			continue
		}
		var fs unix.Statfs_t
		var st unix.Stat_t
		at := dir + "/root" + unescapeMount(f[4])
		if unix.Stat(at, &st) != nil || seen[st.Dev] || unix.Statfs(at, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
			continue
		}
		seen[st.Dev] = true
		used += int64(fs.Blocks-fs.Bfree) * fs.Bsize
	}
	return used
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

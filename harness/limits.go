package harness

import (
	"fmt"
	"time"
)

// Limits are one job's own bounds, held by the daemon's watcher
// (WatchLimits) while its harness runs: a run past one is killed, its whole
// process tree at once, and its Exit says which bound it passed. A zero
// bound is not held.
type Limits struct {
	// Processes bounds the processes of the job's tree and their threads.
	Processes int
	// Memory bounds the resident memory of the job's tree, in bytes, summed
	// over its processes (pages they share count once for each).
	Memory int64
	// Disk bounds the bytes allocated on disk under DiskPaths (the job's
	// harness dir with its /tmp, and its overlay's upper dir).
	Disk      int64
	DiskPaths []string
}

// Held reports whether any bound is set.
func (l Limits) Held() bool { return l.Processes > 0 || l.Memory > 0 || l.Disk > 0 }

// The bounds a Breach names.
const (
	BoundProcesses = "processes"
	BoundMemory    = "memory"
	BoundDisk      = "disk"
)

// Breach is the bound a run passed and what was measured.
type Breach struct {
	Bound string // BoundProcesses, BoundMemory or BoundDisk
	Seen  int64  // processes and threads, or bytes
	Limit int64
	At    time.Time
	Why   string // what passed it, when not the count alone ("more than 1000000 files")
}

// Text says it in words, with the numbers.
func (b Breach) Text() string {
	switch b.Bound {
	case BoundProcesses:
		return fmt.Sprintf("the job's processes and threads reached %d, past its bound of %d", b.Seen, b.Limit)
	case BoundMemory:
		if b.Why != "" {
			return fmt.Sprintf("the job held %s of memory %s, past its bound of %s", MiB(b.Seen), b.Why, MiB(b.Limit))
		}
		return fmt.Sprintf("the job's processes held %s of memory, past its bound of %s", MiB(b.Seen), MiB(b.Limit))
	case BoundDisk:
		if b.Why != "" {
			return fmt.Sprintf("the job's files passed its disk bound of %s: %s", MiB(b.Limit), b.Why)
		}
		return fmt.Sprintf("the job's files took %s of disk, past its bound of %s", MiB(b.Seen), MiB(b.Limit))
	}
	return fmt.Sprintf("the job passed its %s bound", b.Bound)
}

// MiB writes a byte count in MiB.
func MiB(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

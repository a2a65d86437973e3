package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is held by the one `bridge serve` that owns this state dir.
func (d Dir) LockFile() string { return filepath.Join(d.Root, "daemon.lock") }

// ErrLocked: another process holds the state dir's daemon lock.
var ErrLocked = errors.New("the state dir is in use by another bridge serve")

// LockedError names the process that holds the lock (PID 0: unknown).
type LockedError struct {
	Root string
	PID  int
}

func (e *LockedError) Error() string {
	who := "another bridge serve"
	if e.PID > 0 {
		who = fmt.Sprintf("another bridge serve (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is using BRIDGE_STATE_DIR=%s; stop it with `bridgectl stop`", who, e.Root)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held daemon lock; Unlock releases it (the OS releases it too when
// the process dies, however it dies).
type Lock struct{ f *os.File }

// Lock takes the state dir's exclusive daemon lock without waiting: a second
// daemon on the same state dir would otherwise mark the first one's jobs
// interrupted and kill their processes. It returns a *LockedError (errors.Is
// ErrLocked) when another process holds it. The lock file records the
// holder's pid; the file is opened close-on-exec, so children never hold it.
func (d Dir) Lock() (*Lock, error) {
	f, err := os.OpenFile(d.LockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("daemon lock %s: %w", d.LockFile(), err)
	}
	if !held {
		pid := readLockPID(f)
		f.Close()
		return nil, &LockedError{Root: d.Root, PID: pid}
	}
	if err := writeLockPID(f, os.Getpid()); err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("daemon lock %s: %w", d.LockFile(), err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. The file stays (removing it would race a daemon
// that just opened it).
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	unlock(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

func writeLockPID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

func readLockPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// LockHolder returns the pid of the process that holds the state dir's
// daemon lock now, 0 when none does (no daemon runs on this state dir). Only
// `bridge serve` takes that lock, so its holder is provably this state dir's
// daemon, whatever bridge.pid or daemon.json say. On Linux it reads
// /proc/locks and touches nothing; elsewhere it tries a shared lock for an
// instant and takes the pid the holder wrote into the file.
func (d Dir) LockHolder() (int, error) {
	if pid, ok, err := lockHolderFromProc(d.LockFile()); ok || err != nil {
		return pid, err
	}
	f, err := os.Open(d.LockFile())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("daemon lock: %w", err)
	}
	defer f.Close()
	held, err := probeHeld(f)
	if err != nil {
		return 0, fmt.Errorf("daemon lock %s: %w", d.LockFile(), err)
	}
	if !held {
		return 0, nil
	}
	if pid := readLockPID(f); pid > 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("daemon lock %s is held, but the file names no pid", d.LockFile())
}

package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The writes of a Tree: how the daemon lands a job's changes in the
// workspace. Like the reads, each resolves its path below the tree with no
// link followed in any component, so a link the owner keeps in the
// workspace (or one swapped in) is never written through.

// Lstat is the lstat of rel (its last component not followed either); of
// the tree's top for "." or "".
func (t *Tree) Lstat(rel string) (*unix.Stat_t, error) {
	if parts, err := cleanRel(rel); err == nil && len(parts) == 0 {
		var st unix.Stat_t
		if err := unix.Fstat(int(t.root.Fd()), &st); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
		}
		return &st, nil
	}
	d, name, err := t.parent(rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	var st unix.Stat_t
	if err := unix.Fstatat(d, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return &st, nil
}

// WriteFile writes r to rel with perm, atomically: a temporary file in the
// same dir, renamed over rel (which, if it is there, must not be a dir).
// Missing parent dirs are made (0755).
func (t *Tree) WriteFile(rel string, r io.Reader, perm os.FileMode) error {
	d, name, err := t.parent(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	tmp := "." + name + ".bridge-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fd, err := unix.Openat(d, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &fs.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm.Perm()) // past the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d, tmp, d, name)
	}
	if err != nil {
		_ = unix.Unlinkat(d, tmp, 0)
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

// Symlink makes rel a symbolic link to target (replacing a file there).
func (t *Tree) Symlink(target, rel string) error {
	d, name, err := t.parent(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	_ = unix.Unlinkat(d, name, 0)
	if err := unix.Symlinkat(target, d, name); err != nil {
		return &fs.PathError{Op: "symlink", Path: rel, Err: err}
	}
	return nil
}

// Remove removes rel: a file, a link (not what it points at) or an empty dir.
// One that is not there is not an error.
func (t *Tree) Remove(rel string) error {
	d, name, err := t.parent(rel, false)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer unix.Close(d)
	err = unix.Unlinkat(d, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(d, name, unix.AT_REMOVEDIR)
	}
	if err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// Chmod sets the permission bits of rel, never through a link.
func (t *Tree) Chmod(rel string, perm os.FileMode) error {
	d, name, err := t.parent(rel, false)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	fd, err := unix.Openat(d, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: rel, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "chmod", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &fs.PathError{Op: "chmod", Path: rel, Err: unix.ELOOP}
	}
	// An O_PATH descriptor is chmodded through its /proc/self/fd name.
	if err := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), uint32(perm.Perm()), 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: rel, Err: err}
	}
	return nil
}

// MkdirAll makes the dir rel and its missing parents with perm.
func (t *Tree) MkdirAll(rel string, perm os.FileMode) error {
	parts, err := cleanRel(rel)
	if err != nil || len(parts) == 0 {
		return err
	}
	cur, err := unix.Dup(int(t.root.Fd()))
	if err != nil {
		return err
	}
	for _, p := range parts {
		err := unix.Mkdirat(cur, p, uint32(perm.Perm()))
		if err != nil && err != unix.EEXIST {
			unix.Close(cur)
			return &fs.PathError{Op: "mkdir", Path: rel, Err: err}
		}
		next, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return &fs.PathError{Op: "mkdir", Path: rel, Err: fmt.Errorf("%w (a file or a link is in the way)", err)}
		}
		cur = next
	}
	unix.Close(cur)
	return nil
}

// parent opens rel's parent dir below the tree (making it when mk) and
// returns its descriptor and rel's last component.
func (t *Tree) parent(rel string, mk bool) (int, string, error) {
	parts, err := cleanRel(rel)
	if err != nil {
		return -1, "", err
	}
	if len(parts) == 0 {
		return -1, "", &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("the workspace itself")}
	}
	dir := strings.Join(parts[:len(parts)-1], "/")
	if mk && dir != "" {
		if err := t.MkdirAll(dir, 0o755); err != nil {
			return -1, "", err
		}
	}
	fd, err := openBeneath(int(t.root.Fd()), parts[:len(parts)-1], dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: filepath.Dir(rel), Err: err}
	}
	return fd, parts[len(parts)-1], nil
}

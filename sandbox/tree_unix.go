//go:build unix

package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// open opens rel below the tree, refusing a link in any component.
func (t *Tree) open(rel string, dir bool) (*os.File, error) {
	parts, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if dir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := openBeneath(int(t.root.Fd()), parts, rel, flags)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(t.Path, filepath.FromSlash(rel))), nil
}

// openComponents opens parts below dirfd one component at a time, each
// directory with O_NOFOLLOW|O_DIRECTORY: the way openat2's
// RESOLVE_NO_SYMLINKS resolves, on a system without it.
func openComponents(dirfd int, parts []string, flags int) (int, error) {
	if len(parts) == 0 {
		return unix.Openat(dirfd, ".", flags, 0)
	}
	cur := dirfd
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	fd, err := unix.Openat(cur, parts[len(parts)-1], flags, 0)
	if cur != dirfd {
		unix.Close(cur)
	}
	return fd, err
}

// lstatAt is the lstat of name in the open directory d.
func lstatAt(d *os.File, name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return statInfo{name: name, st: st}, nil
}

// statInfo is an fs.FileInfo of a unix stat, with the mode bits as package
// os sets them (so a manifest taken either way compares equal).
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { ts := s.st.Mtim; return time.Unix(ts.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Tree is a workspace opened once, for the daemon to walk and read outside
// every sandbox: each directory and file below it is opened relative to it
// with no symlink followed in any component of its path (not only the
// last) and without blocking on a FIFO. A directory a job swaps for a link
// while the daemon walks or reads — to a directory outside the workspace,
// or to another inside it — is refused, never followed.
type Tree struct {
	// Path is the workspace as it was opened.
	Path string
	root *os.File
}

// OpenTree opens the workspace ws (absolute; itself not a symlink).
func OpenTree(ws string) (*Tree, error) {
	f, err := os.OpenFile(ws, os.O_RDONLY|openDirFlags, 0)
	if err != nil {
		return nil, err
	}
	return &Tree{Path: ws, root: f}, nil
}

// Close closes the workspace's directory.
func (t *Tree) Close() error { return t.root.Close() }

// Open opens the regular file rel (slash-separated, relative to the
// workspace) for reading; anything else — a link in any component, a
// FIFO, a device, a directory — is an error.
func (t *Tree) Open(rel string) (*os.File, error) {
	f, err := t.open(rel, false)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: rel, Err: errNotRegular}
	}
	return f, nil
}

// errNotRegular: Tree.Open found something other than a regular file.
var errNotRegular = errors.New("not a regular file")

// ReadDir lists the directory rel unsorted; with stat, every entry but a
// directory carries its lstat (taken relative to the open directory, so
// DirEntry.Info costs nothing more and never resolves a path again).
func (t *Tree) ReadDir(rel string, stat bool) ([]fs.DirEntry, error) {
	f, err := t.open(rel, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	if stat {
		for i, e := range entries {
			if e.IsDir() {
				continue
			}
			if info, err := lstatAt(f, e.Name()); err == nil {
				entries[i] = fs.FileInfoToDirEntry(info)
			}
		}
	}
	return entries, nil
}

// Rel is p (a path at or below the tree's Path) relative to it, slash-separated.
func (t *Tree) Rel(p string) string {
	rel, err := filepath.Rel(t.Path, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// cleanRel checks rel: relative, no "..", "." for the top.
func cleanRel(rel string) ([]string, error) {
	if rel == "" || rel == "." {
		return nil, nil
	}
	if strings.HasPrefix(rel, "/") {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.New("not relative to the workspace")}
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.New("not a clean path below the workspace")}
		}
	}
	return parts, nil
}

//go:build !unix

package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// open opens rel through an os.Root, which refuses to leave the workspace
// (but follows a link inside it); the bridge's sandbox is Linux and macOS only.
func (t *Tree) open(rel string, _ bool) (*os.File, error) {
	if _, err := cleanRel(rel); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(t.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(filepath.FromSlash(rel))
}

func lstatAt(d *os.File, name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(d.Name(), name))
}

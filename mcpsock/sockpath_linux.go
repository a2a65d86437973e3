package mcpsock

import (
	"fmt"
	"os"
	"path/filepath"
)

// shortPath is a name for the socket at path that fits sun_path: path
// itself, or, when it is too long, /proc/self/fd/N/NAME with N an open
// descriptor of its directory (the kernel resolves it like the directory).
// Call done once the bind or connect has returned.
func shortPath(path string) (string, func(), error) {
	if len(path) <= maxSocketPath {
		return path, func() {}, nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return "", nil, fmt.Errorf("socket %s: %w", path, err)
	}
	name := fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), filepath.Base(path))
	if len(name) > maxSocketPath {
		d.Close()
		return "", nil, tooLong(path)
	}
	return name, func() { d.Close() }, nil
}

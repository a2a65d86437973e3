//go:build !linux

package mcpsock

// shortPath is path when it fits sun_path; other systems have no
// /proc/self/fd to bind a long path through.
func shortPath(path string) (string, func(), error) {
	if len(path) > maxSocketPath {
		return "", nil, tooLong(path)
	}
	return path, func() {}, nil
}

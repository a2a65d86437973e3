//go:build unix && !linux

package sandbox

// openBeneath opens parts below dirfd one component at a time (no openat2 here).
func openBeneath(dirfd int, parts []string, _ string, flags int) (int, error) {
	return openComponents(dirfd, parts, flags)
}

package statedir

import "golang.org/x/sys/unix"

func space(path string) (uint64, bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, false, err
	}
	return st.Bavail * uint64(st.Bsize), st.Flags&unix.ST_RDONLY != 0, nil
}

//go:build !unix

package changes

// openFileFlags: no O_NOFOLLOW off unix (readStart checks with Lstat
// first); the bridge's sandbox is Linux and macOS only.
const openFileFlags = 0

//go:build !unix

package sandbox

// openDirFlags: no O_NOFOLLOW off unix; the bridge's sandbox is Linux and macOS only.
const openDirFlags = 0

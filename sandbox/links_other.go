//go:build !unix

package sandbox

// hardLinks is unknown off unix; the bridge's sandbox is Linux and macOS only.
func hardLinks(string) (uint64, bool) { return 0, false }

func isNotDir(error) bool { return false }

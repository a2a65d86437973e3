//go:build unix

package sandbox

import "syscall"

// openDirFlags make WorkspaceSecrets open only real directories.
const openDirFlags = syscall.O_NOFOLLOW | syscall.O_DIRECTORY

//go:build !linux

package fulldisk

import "errors"

var errNotLinux = errors.New("tmpfs mounts are Linux only")

func mount(string, int) error { return errNotLinux }

func unmount(string) error { return nil }

func remount(string, int, bool) error { return errNotLinux }

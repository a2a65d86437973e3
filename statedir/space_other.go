//go:build !linux

package statedir

import "errors"

func space(string) (uint64, bool, error) { return 0, false, errors.ErrUnsupported }

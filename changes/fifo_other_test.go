//go:build !unix

package changes

import "errors"

func syscallMkfifo(string) error { return errors.New("no FIFOs here") }

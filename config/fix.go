package config

import "errors"

// Error is a failure the owner fixes in the configuration — the .env, the
// environment, a flag naming a file — rather than one of the program: the
// bridge's commands exit 2 on it (MustFix).
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// MustFix reports whether err is the owner's to fix in the configuration: an
// *Error, or a secret or runtime root the daemon refused (ErrBadSecret,
// ErrBadRuntimeRoot).
func MustFix(err error) bool {
	var ce *Error
	return errors.As(err, &ce) || errors.Is(err, ErrBadSecret) || errors.Is(err, ErrBadRuntimeRoot)
}

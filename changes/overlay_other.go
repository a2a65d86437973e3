//go:build !linux

package changes

import (
	"context"
	"errors"
	"time"
)

// errNoOverlay: overlay jobs exist only on Linux.
var errNoOverlay = errors.New("a job's overlay needs Linux")

// FromOverlay has no overlay to read outside Linux.
func FromOverlay(context.Context, string, string, Git, bool) (Report, error) {
	return Report{}, errNoOverlay
}

// Apply has no overlay to land outside Linux.
func Apply(string, string) (*OverlayRecord, error) { return nil, errNoOverlay }

// Promote has no overlay to land outside Linux.
func Promote(string, string, []string) (*OverlayRecord, error) { return nil, errNoOverlay }

// Discard has no overlay outside Linux.
func Discard(string, string, []string) (*OverlayRecord, error) { return nil, errNoOverlay }

// Carry has no overlay outside Linux.
func Carry(string, string, string) (bool, time.Time, error) { return false, time.Time{}, nil }

// Package poll waits, bounded, for state another process changes, where
// there is no event or channel to wait on (a file another binary writes, a
// process that exits). Inside one process, wait on a channel or use
// testing/synctest instead.
package poll

import "time"

// Interval is how often Until checks.
const Interval = 50 * time.Millisecond

// Until checks cond every Interval until it holds or limit passes; it
// reports whether cond held, checking once more at the limit.
func Until(limit time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// Package workers runs one function over a range of indexes on a few
// goroutines: the bounded fan-out the workspace walks use, which wait on the
// file system more than on the CPU.
package workers

import "sync"

// Each calls f(i) for every i in [0, n), on at most k goroutines (the
// caller's among them; k < 1 counts as 1), and returns when every call has returned. Calls run
// in index order of their start; f must be safe to call concurrently.
func Each(n, k int, f func(i int)) {
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	work := func() {
		defer wg.Done()
		for {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= n {
				return
			}
			f(i)
		}
	}
	if n <= 0 {
		return
	}
	k = max(1, min(k, n))
	wg.Add(k)
	for range k - 1 {
		go work() // owner: Each; joined by wg.Wait
	}
	work()
	wg.Wait()
}

package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Latencies is a sorted sample of request latencies.
type Latencies []time.Duration

// Quantile is the q-quantile (0 < q ≤ 1) by the nearest-rank method; 0 for
// an empty sample.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(l)))) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// LoadResult is one closed-loop run.
type LoadResult struct {
	Clients  int
	Lat      Latencies // of the successful requests, sorted
	Done     int       // successful requests, warm-up included (for CPU per call)
	Errors   int
	FirstErr error
	Elapsed  time.Duration // of the measured part
}

// Throughput is successful requests per second over the measured part.
func (r LoadResult) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Lat)) / r.Elapsed.Seconds()
}

// merge adds o's requests to r (r.Lat stays sorted).
func (r *LoadResult) merge(o LoadResult) {
	r.Clients = o.Clients
	r.Lat = append(r.Lat, o.Lat...)
	slices.Sort(r.Lat)
	r.Errors += o.Errors
	r.Done += o.Done
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.Elapsed += o.Elapsed
}

// ClosedLoop runs clients workers, each sending its next request as soon as
// the previous one is answered (do(ctx, worker)): warmup first, unmeasured,
// then for measure or until maxRequests have completed, whichever comes
// first. Requests in flight at the end are let finish (and counted); ctx's
// end cancels them. Every worker has returned when it returns.
func ClosedLoop(ctx context.Context, clients int, warmup, measure time.Duration, maxRequests int, do func(ctx context.Context, worker int) error) LoadResult {
	var (
		mu       sync.Mutex
		lat      []time.Duration
		errs     int
		done     int
		firstErr error
		stopped  bool
		start    = time.Now()
		measureT = start.Add(warmup)
		endT     = measureT.Add(measure)
	)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() { // owner: ClosedLoop; joined below
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				mu.Lock()
				stop := stopped || t0.After(endT)
				mu.Unlock()
				if stop {
					return
				}
				err := do(ctx, w)
				d := time.Since(t0)
				mu.Lock()
				if err == nil {
					done++
				}
				if t0.Before(measureT) {
					mu.Unlock()
					continue
				}
				switch {
				case err != nil && ctx.Err() == nil:
					errs++
					if firstErr == nil {
						firstErr = err
					}
				case err == nil:
					lat = append(lat, d)
					if len(lat) >= maxRequests {
						stopped = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(measureT)
	slices.Sort(lat)
	return LoadResult{Clients: clients, Lat: lat, Done: done, Errors: errs, FirstErr: firstErr, Elapsed: elapsed}
}

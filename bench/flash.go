package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
)

func flashCall(ctx context.Context, c *Client) error {
	res, err := c.CallTool(ctx, "deepseek_flash", map[string]any{"task": flashTask})
	if err != nil {
		return err
	}
	if res.IsError || res.Text == "" {
		return fmt.Errorf("deepseek_flash answered an error: %.300s", res.Text)
	}
	return nil
}

// idle reads the idle figures, warms up with a few calls and reads the
// baseline the load run is compared with.
func (r *runner) idle(ctx context.Context) error {
	// The daemon has just said it listens; give its start-up a moment to end.
	if !backoff.Sleep(ctx, 300*time.Millisecond) {
		return ctx.Err()
	}
	var err error
	if r.rep.RSSIdle, err = RSS(r.b.pid()); err != nil {
		return err
	}
	st, err := r.b.runtimeStats(ctx)
	if err != nil {
		return err
	}
	r.rep.GoroutinesIdle = st.Goroutines

	// Warm-up at 4 clients: the bridge's upstream client keeps up to 2 idle
	// connections to the double (net/http's default), so the baseline has
	// them too and the count after the load can be compared with it.
	step(r.o, "warm-up (4 clients, 300 ms)")
	tr := newTransport(4)
	cs, err := r.clients(ctx, 4, tr)
	if err != nil {
		return err
	}
	res := ClosedLoop(ctx, 4, 0, 300*time.Millisecond, 1000, func(ctx context.Context, w int) error { return flashCall(ctx, cs[w]) })
	if res.Errors > 0 || len(res.Lat) == 0 {
		return fmt.Errorf("warm-up: %d errors, first: %v", res.Errors, res.FirstErr)
	}
	tr.CloseIdleConnections()
	if r.rep.GoroutinesBase, err = r.stableGoroutines(ctx); err != nil {
		return err
	}
	r.rep.RSSWarm, err = RSS(r.b.pid())
	return err
}

// stableGoroutines waits (≤ 3 s) for two equal readings 100 ms apart.
func (r *runner) stableGoroutines(ctx context.Context) (Goroutines, error) {
	prev := -1
	deadline := time.Now().Add(3 * time.Second)
	for {
		g, err := r.b.goroutines(ctx)
		if err != nil {
			return g, err
		}
		if g.Total == prev || time.Now().After(deadline) {
			return g, nil
		}
		prev = g.Total
		if !backoff.Sleep(ctx, 100*time.Millisecond) {
			return g, ctx.Err()
		}
	}
}

// settleGoroutines waits (≤ 5 s) for the count without the connection pool
// to come down to target's and returns the last reading.
func (r *runner) settleGoroutines(ctx context.Context, target Goroutines) (Goroutines, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, err := r.b.goroutines(ctx)
		if err != nil {
			return g, err
		}
		if g.Own() <= target.Own() || time.Now().After(deadline) {
			return g, nil
		}
		if !backoff.Sleep(ctx, 50*time.Millisecond) {
			return g, ctx.Err()
		}
	}
}

// cellSlices is how many alternating floor/minimal proxy/bridge slices a
// cell's measured time is cut into, so that other load on the machine
// (which comes and goes) weighs on every side alike.
const cellSlices = 4

// cell measures deepseek_flash through the bridge, through the minimal
// proxy (withMin) and as the same request straight to the double, n clients
// each, in alternating slices, with the CPU time each process spent on each
// side.
func (r *runner) cell(ctx context.Context, n int, warmup, measure time.Duration, maxReq int, withMin bool) (FlashCell, error) {
	cell := FlashCell{Clients: n}
	ftr, btr, mtr := newTransport(n), newTransport(n), newTransport(n)
	defer ftr.CloseIdleConnections()
	defer btr.CloseIdleConnections()
	defer mtr.CloseIdleConnections()
	floor, err := NewFloorClient(r.doubleURL, benchKey, deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, flashTask, &http.Client{Transport: ftr, Timeout: time.Minute})
	if err != nil {
		return cell, err
	}
	cs, err := r.clients(ctx, n, btr)
	if err != nil {
		return cell, err
	}
	type side struct {
		do  func(context.Context, int) error
		res *LoadResult
		cpu *SideCPU
	}
	sides := []side{
		{func(ctx context.Context, _ int) error { _, err := floor.Do(ctx); return err }, &cell.Floor, &cell.FloorCPU},
		{func(ctx context.Context, w int) error { return flashCall(ctx, cs[w]) }, &cell.Bridge, &cell.BridgeCPU},
	}
	if withMin {
		ms, err := clientsOf(ctx, r.minURL, n, mtr)
		if err != nil {
			return cell, fmt.Errorf("minimal proxy: %w", err)
		}
		sides = append(sides, side{func(ctx context.Context, w int) error { return flashCall(ctx, ms[w]) }, &cell.MinProxy, &cell.MinProxyCPU})
	}
	slice := measure / cellSlices
	for i := range cellSlices {
		w := time.Duration(0)
		if i == 0 {
			w = warmup
		}
		for _, sd := range sides {
			before, err := r.cpu()
			if err != nil {
				return cell, err
			}
			lr := ClosedLoop(ctx, n, w, slice, maxReq/cellSlices, sd.do)
			after, err := r.cpu()
			if err != nil {
				return cell, err
			}
			sd.cpu.add(after.sub(before))
			sd.res.merge(lr)
		}
	}
	for _, sd := range sides {
		if lr := sd.res; lr.Errors > 0 {
			return cell, fmt.Errorf("%d clients: %d failed requests, first: %v", n, lr.Errors, lr.FirstErr)
		}
		if len(sd.res.Lat) == 0 {
			return cell, fmt.Errorf("%d clients: no request finished", n)
		}
	}
	return cell, ctx.Err()
}

// SideCPU is the CPU time the bridge, the minimal proxy, the double and the
// load driver spent during one side's slices of a cell (their warm-up
// included).
type SideCPU struct{ Bridge, MinProxy, Double, Driver time.Duration }

func (c *SideCPU) add(o SideCPU) {
	c.Bridge += o.Bridge
	c.MinProxy += o.MinProxy
	c.Double += o.Double
	c.Driver += o.Driver
}

func (c SideCPU) sub(o SideCPU) SideCPU {
	return SideCPU{Bridge: c.Bridge - o.Bridge, MinProxy: c.MinProxy - o.MinProxy, Double: c.Double - o.Double, Driver: c.Driver - o.Driver}
}

// Total is the CPU of all the processes.
func (c SideCPU) Total() time.Duration { return c.Bridge + c.MinProxy + c.Double + c.Driver }

// cpu reads the CPU time the bridge, the minimal proxy, the double and this
// load driver have used so far.
func (r *runner) cpu() (SideCPU, error) {
	var c SideCPU
	var err error
	if c.Bridge, err = CPUTime(r.b.pid()); err != nil {
		return c, err
	}
	if c.MinProxy, err = CPUTime(r.minProxy.pid()); err != nil {
		return c, err
	}
	if c.Double, err = CPUTime(r.double.pid()); err != nil {
		return c, err
	}
	c.Driver, err = CPUTime(os.Getpid())
	return c, err
}

// bridgeLoop is the bridge half of a cell: n initialized clients calling
// deepseek_flash in a closed loop.
func (r *runner) bridgeLoop(ctx context.Context, n int, warmup, measure time.Duration, maxReq int) (LoadResult, error) {
	tr := newTransport(n)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, n, tr)
	if err != nil {
		return LoadResult{}, err
	}
	return ClosedLoop(ctx, n, warmup, measure, maxReq, func(ctx context.Context, w int) error { return flashCall(ctx, cs[w]) }), nil
}

func (r *runner) flash(ctx context.Context) error {
	for _, n := range r.o.Concurrency {
		step(r.o, "deepseek_flash latency, %d clients: floor, bridge and minimal proxy alternating, %s each", n, r.o.CellDuration)
		c, err := r.cell(ctx, n, r.o.Warmup, r.o.CellDuration, r.o.CellMaxRequests, true)
		if err != nil {
			return err
		}
		r.rep.Flash = append(r.rep.Flash, c)
	}
	if r.o.ProfileDir != "" && len(r.o.Concurrency) > 0 {
		n := r.o.Concurrency[len(r.o.Concurrency)-1]
		step(r.o, "CPU profile of the bridge at %d clients (extra run, not in the table)", n)
		path := filepath.Join(r.o.ProfileDir, fmt.Sprintf("bridge-cpu-%dclients.pprof", n))
		errc := make(chan error, 1)
		go func() { errc <- r.b.profile(ctx, "profile", 3, path) }() // joined below
		if _, err := r.bridgeLoop(ctx, n, 0, 3500*time.Millisecond, 1<<30); err != nil {
			return err
		}
		if err := <-errc; err != nil {
			return err
		}
		r.rep.Profiles = append(r.rep.Profiles, path)
	}
	return nil
}

// saturation runs the throughput cell while sampling RSS and goroutines,
// then checks that the goroutine count returns to the baseline.
func (r *runner) saturation(ctx context.Context) error {
	step(r.o, "tools/call throughput at saturation: %d clients, %s each (floor and bridge alternating)", r.o.SaturationClients, r.o.SaturationDuration)
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var peakRSS atomic.Int64
	var peakG atomic.Int64
	wg.Add(1)
	go func() { // owner: saturation; joined below
		defer wg.Done()
		for backoff.Sleep(sctx, 100*time.Millisecond) {
			if v, err := RSS(r.b.pid()); err == nil && v > peakRSS.Load() {
				peakRSS.Store(v)
			}
			if st, err := r.b.runtimeStats(sctx); err == nil && int64(st.Goroutines) > peakG.Load() {
				peakG.Store(int64(st.Goroutines))
			}
		}
	}()
	c, err := r.cell(ctx, r.o.SaturationClients, r.o.Warmup, r.o.SaturationDuration, 1<<30, false)
	stopSampling()
	wg.Wait()
	if err != nil {
		return err
	}
	r.rep.Saturation = c
	r.rep.RSSLoadPeak, r.rep.GoroutinesPeak = peakRSS.Load(), int(peakG.Load())
	if r.rep.GoroutinesAfter, err = r.settleGoroutines(ctx, r.rep.GoroutinesBase); err != nil {
		return err
	}
	r.rep.RSSAfter, err = RSS(r.b.pid())
	return err
}

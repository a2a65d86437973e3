package bench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// heldSleep is how long the stand-in of the held-poll job sleeps; the job is
// cancelled long before.
const heldSleep = "120s"

// held starts a job whose stand-in sleeps, holds HeldPolls concurrent
// deepseek_agent_poll calls on it, reads the bridge's memory and goroutines,
// cancels the job and checks that every poll is answered cancelled and that
// the goroutines return to where they were.
func (r *runner) held(ctx context.Context) error {
	n := r.o.HeldPolls
	h := &r.rep.Held
	h.Polls, h.HarnessSleep = n, heldSleep
	step(r.o, "%d held long-polls on a running job (wait_seconds %d)", n, int(r.o.HeldWait/time.Second))

	ctl := newTransport(1)
	defer ctl.CloseIdleConnections()
	cc, err := r.clients(ctx, 1, ctl)
	if err != nil {
		return err
	}
	job, err := agentCall(ctx, cc[0], "deepseek_agent_start", map[string]any{"task": "sleep " + heldSleep, "workspace": r.ws})
	if err != nil {
		return err
	}
	r.rep.JobsStarted++
	h.StatusBefore = job.Status
	if job.Status != "running" {
		return fmt.Errorf("held-poll job %s is %s (%s), want running", job.JobID, job.Status, job.Error)
	}
	// Every client has its own transport and so its own connection, as a
	// host would: initialize and poll go over the same one.
	cs := make([]*Client, n)
	trs := make([]*http.Transport, n)
	for i := range cs {
		trs[i] = newTransport(1)
		cs[i] = NewClient(r.mcpURL, &http.Client{Transport: trs[i], Timeout: r.o.HeldWait + time.Minute})
	}
	closeAll := func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}
	defer closeAll()
	ctl.CloseIdleConnections()
	if h.GoroutinesBefore, err = r.stableGoroutines(ctx); err != nil {
		return err
	}
	stBefore, err := r.b.runtimeStats(ctx)
	if err != nil {
		return err
	}
	h.HeapBefore, h.StackBefore = stBefore.HeapInuse, stBefore.StackInuse
	if h.RSSBefore, err = RSS(r.b.pid()); err != nil {
		return err
	}

	// Each client initializes, then polls; sent counts polls on the wire.
	var (
		sent, answered atomic.Int64
		mu             sync.Mutex
		results        = make([]agentPayload, n)
		errs           = make([]error, n)
		wg             sync.WaitGroup
		allSent        = make(chan struct{})
		sentOnce       sync.Once
	)
	pctx, cancelPolls := context.WithCancel(ctx)
	defer cancelPolls()
	args := map[string]any{"job_id": job.JobID, "wait_seconds": int(r.o.HeldWait / time.Second)}
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() { // owner: held; joined below
			defer wg.Done()
			if err := cs[i].Initialize(pctx); err != nil {
				errs[i] = err
				if sent.Add(1) == int64(n) {
					sentOnce.Do(func() { close(allSent) })
				}
				return
			}
			if sent.Add(1) == int64(n) {
				sentOnce.Do(func() { close(allSent) })
			}
			p, err := agentCall(pctx, cs[i], "deepseek_agent_poll", args)
			answered.Add(1)
			mu.Lock()
			results[i], errs[i] = p, err
			mu.Unlock()
		}()
	}
	// Bounded: the polls wait HeldWait at most, so all must be on the wire well before.
	select {
	case <-allSent:
	case <-time.After(r.o.HeldWait / 2):
		cancelPolls()
		wg.Wait()
		return fmt.Errorf("only %d of %d polls were sent within %s", sent.Load(), n, r.o.HeldWait/2)
	case <-ctx.Done():
		wg.Wait()
		return ctx.Err()
	}
	// The last requests are on the wire; wait until the bridge holds them
	// all (its goroutine count stops rising).
	if _, err := r.stableGoroutines(ctx); err != nil {
		return err
	}
	h.Ramp = time.Since(t0)
	stHeld, err := r.b.runtimeStats(ctx)
	if err != nil {
		return err
	}
	if h.RSSHeld, err = RSS(r.b.pid()); err != nil {
		return err
	}
	h.Held = n - int(answered.Load())
	h.GoroutinesHeld = stHeld.Goroutines
	h.HeapHeld, h.StackHeld = stHeld.HeapInuse, stHeld.StackInuse
	if r.o.ProfileDir != "" {
		for _, name := range []string{"heap", "goroutine"} {
			path := filepath.Join(r.o.ProfileDir, fmt.Sprintf("bridge-%s-%dheld.pprof", name, n))
			if err := r.b.profile(ctx, name, 0, path); err != nil {
				return err
			}
			r.rep.Profiles = append(r.rep.Profiles, path)
		}
	}

	tc := time.Now()
	cancelled, err := agentCall(ctx, cc[0], "deepseek_agent_cancel", map[string]any{"job_id": job.JobID})
	if err != nil {
		return err
	}
	if cancelled.Status != "cancelled" {
		return fmt.Errorf("cancel of job %s: status %s", job.JobID, cancelled.Status)
	}
	wg.Wait()
	h.CancelToAllAnswered = time.Since(tc)
	for i := range n {
		switch {
		case errs[i] == nil && results[i].Status == "cancelled":
			h.Cancelled++
		default:
			h.Failed++
			if h.FirstFailure == "" {
				if errs[i] != nil {
					h.FirstFailure = errs[i].Error()
				} else {
					h.FirstFailure = "status " + results[i].Status
				}
			}
		}
	}
	closeAll()
	ctl.CloseIdleConnections()
	if h.GoroutinesAfter, err = r.settleGoroutines(ctx, h.GoroutinesBefore); err != nil {
		return err
	}
	h.RSSAfter, err = RSS(r.b.pid())
	if h.Held > 0 {
		h.GoroutinesPerPoll = float64(h.GoroutinesHeld-h.GoroutinesBefore.Total) / float64(h.Held)
		h.RSSPerPoll = float64(h.RSSHeld-h.RSSBefore) / float64(h.Held)
	}
	return err
}

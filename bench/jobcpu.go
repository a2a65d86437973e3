package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/poll"
)

// JobCPU is the bridge's CPU per agent job on the machine as it is, and with
// IdleProcs more idle processes on it: a job's start and end must cost the
// same whatever else the machine runs (issue 31).
type JobCPU struct {
	Jobs        int           // stand-in jobs per measure
	Procs, Busy int           // processes on the machine: as it is, and with the idle ones
	Few, Many   time.Duration // the bridge's CPU per job: as it is (the mean of a measure before and one after), and with the idle ones
}

// Ratio is Many over Few.
func (j JobCPU) Ratio() float64 { return float64(j.Many) / float64(max(j.Few, 1)) }

// jobCPU measures the bridge's CPU per stand-in job, then starts
// IdleProcs idle processes (sleeps in a process group of the bench's own,
// bounded by the run's context) and measures again, stops them, and
// measures once more.
func (r *runner) jobCPU(ctx context.Context) error {
	if r.o.IdleProcs <= 0 {
		return nil
	}
	step(r.o, "bridge CPU per agent job: %d jobs, then %d more with %d idle processes on the machine, then %d without", r.o.JobCPUSamples, r.o.JobCPUSamples, r.o.IdleProcs, r.o.JobCPUSamples)
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, 1, tr)
	if err != nil {
		return err
	}
	perJob := func() (time.Duration, error) {
		before, err := CPUTime(r.b.pid())
		if err != nil {
			return 0, err
		}
		if _, _, _, err := r.timeJobs(ctx, cs[0], r.ws, r.o.JobCPUSamples); err != nil {
			return 0, err
		}
		after, err := CPUTime(r.b.pid())
		return (after - before) / time.Duration(r.o.JobCPUSamples), err
	}
	j := JobCPU{Jobs: r.o.JobCPUSamples, Procs: countProcs()}
	first, err := perJob()
	if err != nil {
		return err
	}
	stop, err := startIdle(ctx, r.o.IdleProcs)
	if err != nil {
		return err
	}
	j.Busy = countProcs()
	var errc chan error
	if r.o.ProfileDir != "" { // what the jobs cost with the idle processes on
		path := filepath.Join(r.o.ProfileDir, fmt.Sprintf("bridge-cpu-jobs-%dprocs.pprof", j.Busy))
		errc = make(chan error, 1)
		go func() { errc <- r.b.profile(ctx, "profile", 3, path) }() // joined below
		r.rep.Profiles = append(r.rep.Profiles, path)
	}
	j.Many, err = perJob()
	if errc != nil {
		if perr := <-errc; err == nil {
			err = perr
		}
	}
	stop()
	if err != nil {
		return err
	}
	last, err := perJob()
	if err != nil {
		return err
	}
	j.Few = (first + last) / 2
	r.rep.JobCPU = &j
	return nil
}

// countProcs counts the machine's processes (/proc's numeric entries).
func countProcs() int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// startIdle starts n idle processes (sleep) in one process group of their
// own and returns once all n run; stop kills the
// group and waits for it. The sleeps end on their own within the hour, and
// the group is killed when ctx ends.
func startIdle(ctx context.Context, n int) (stop func(), err error) {
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do sleep 3600 & i=$((i+1)); done; wait", n)
	cmd := exec.Command("sh", "-c", script)
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("idle processes: %w", err)
	}
	done := make(chan struct{})
	go func() { // owner: startIdle's caller, through stop
		select {
		case <-ctx.Done():
			signalGroup(cmd, true)
		case <-done:
		}
	}()
	stop = func() {
		signalGroup(cmd, true)
		_ = cmd.Wait()
		close(done)
	}
	if !poll.Until(2*time.Minute, func() bool { return children(cmd.Process.Pid) >= n || ctx.Err() != nil }) || ctx.Err() != nil {
		stop()
		return nil, fmt.Errorf("idle processes: %d of %d started in 2 min", children(cmd.Process.Pid), n)
	}
	return stop, nil
}

// children counts pid's living children (/proc/PID/task/PID/children).
func children(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	return len(strings.Fields(string(b)))
}

// jobCPURows: the bridge's CPU per job with few and with many processes.
func (r *Report) jobCPURows(add func(Row)) {
	j := r.JobCPU
	if j == nil {
		return
	}
	add(Row{Metric: fmt.Sprintf("bridge CPU per agent job (n=%d each): %d processes on the machine; %d (idle ones started by the bench); ratio", j.Jobs, j.Procs, j.Busy),
		Bridge: fmtDur(j.Many), Floor: fmtDur(j.Few), Added: fmt.Sprintf("%.2f×", j.Ratio()),
		Target: "ratio ≤ 1.10×", Verdict: verdict(j.Ratio() <= 1.10)})
}

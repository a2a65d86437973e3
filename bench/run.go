package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/backoff"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/server"
)

// Fake credentials of the run: the double accepts the key, the bridge
// serves on the secret; neither is or looks like a real one.
const (
	benchSecret = "test-secret-0123456789abcdef"
	benchKey    = deepseektest.DefaultKey
	flashTask   = "bench: answer briefly"
)

// Options bound a run. DefaultOptions is what `make bench` uses.
type Options struct {
	BridgeBin, DoubleBin, HarnessBin string // built binaries: bridge, deepseek-double, the stand-in harness

	Concurrency     []int         // flash latency cells (clients)
	Warmup          time.Duration // unmeasured start of each cell
	CellDuration    time.Duration // measured part of each cell…
	CellMaxRequests int           // …or until this many answers, whichever first

	SaturationClients  int           // clients of the throughput run
	SaturationDuration time.Duration // its measured part

	PollSamples  int           // serial polls of a finished job
	SpawnSamples int           // jobs timed from start to the stand-in running
	HeldPolls    int           // concurrent long-polls held on one running job
	HeldWait     time.Duration // their wait_seconds (≤ server.MaxPollWait)

	// ProfileDir, when set, gets a CPU profile of the bridge taken during an
	// extra (unmeasured) run at the highest concurrency, and a heap and
	// goroutine profile while the long-polls are held.
	ProfileDir string

	Progress io.Writer // one line per phase (nil = none)
}

// DefaultOptions: 1, 16 and 64 clients for 4 s each, 5 s at saturation,
// 1,000 held polls; the whole run takes about a minute.
func DefaultOptions() Options {
	return Options{
		Concurrency: []int{1, 16, 64}, Warmup: 500 * time.Millisecond, CellDuration: 4 * time.Second, CellMaxRequests: 20000,
		SaturationClients: 128, SaturationDuration: 5 * time.Second,
		PollSamples: 2000, SpawnSamples: 30, HeldPolls: 1000, HeldWait: server.MaxPollWait,
	}
}

// FlashCell is one concurrency level of deepseek_flash against its floor.
type FlashCell struct {
	Clients             int
	Bridge, Floor       LoadResult
	BridgeCPU, FloorCPU SideCPU // CPU used during the bridge's and the floor's slices
}

// Held is the held long-poll run.
type Held struct {
	Polls                             int           // polls sent
	Held                              int           // polls still open when the memory was read
	Cancelled                         int           // polls answered with status cancelled after the cancel
	Failed                            int           // polls that failed or answered anything else
	FirstFailure                      string        // the first of those
	Ramp                              time.Duration // from the first poll sent to all of them held
	RSSBefore, RSSHeld                int64
	HeapBefore, HeapHeld              uint64 // HeapInuse
	StackBefore, StackHeld            uint64 // StackInuse
	GoroutinesBefore, GoroutinesAfter Goroutines
	GoroutinesHeld                    int
	RSSAfter                          int64
	CancelToAllAnswered               time.Duration
	StatusBefore                      string // the job's status when the polls were sent
	HarnessSleep                      string
	GoroutinesPerPoll, RSSPerPoll     float64
}

// Report is everything one run measured.
type Report struct {
	Machine Machine
	Options Options

	Flash      []FlashCell
	Saturation FlashCell

	RSSIdle     int64 // just after start, nothing served yet
	RSSWarm     int64 // after the warm-up calls, before the load
	RSSLoadPeak int64 // highest sample during the throughput run
	RSSAfter    int64 // after the load, connections closed

	GoroutinesIdle  int        // just after start
	GoroutinesBase  Goroutines // after the warm-up calls, connections closed
	GoroutinesPeak  int        // highest sample during the throughput run
	GoroutinesAfter Goroutines // after the load, connections closed

	Poll        Latencies // poll of a finished job
	Spawn       Latencies // deepseek_agent_start sent → stand-in running
	SpawnFloor  Latencies // exec of the stand-in → stand-in running
	JobsStarted int

	Held Held

	BridgeExit string // how `bridge serve` ended on SIGTERM
	SandboxOff bool   // no bubblewrap here: the run had BRIDGE_SANDBOX=off
	Elapsed    time.Duration
	Profiles   []string
}

// Run starts the double and `bridge serve`, measures, stops both and
// returns the report. It talks to loopback only and bounds every phase; ctx
// ends it early.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	for _, b := range []struct {
		name string
		path *string
	}{{"bridge", &o.BridgeBin}, {"deepseek-double", &o.DoubleBin}, {"stand-in harness", &o.HarnessBin}} {
		if st, err := os.Stat(*b.path); err != nil || st.IsDir() {
			return nil, fmt.Errorf("%s binary %q: not found (make bench builds it)", b.name, *b.path)
		}
		abs, err := filepath.Abs(*b.path) // the children run in a temporary directory
		if err != nil {
			return nil, err
		}
		*b.path = abs
	}
	tmp, err := os.MkdirTemp("", "bridge-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	stateDir, roots := filepath.Join(tmp, "state"), filepath.Join(tmp, "roots")
	ws := filepath.Join(roots, "ws")
	for _, d := range []string{stateDir, ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	rep := &Report{Machine: ReadMachine(), Options: o}

	step(o, "starting deepseek-double and bridge serve")
	double, doubleURL, err := startDouble(ctx, o.DoubleBin, benchKey, tmp)
	if err != nil {
		return nil, err
	}
	defer double.stop()
	emptyEnv := filepath.Join(tmp, "empty.env") // a named .env must exist; this one sets nothing
	if err := os.WriteFile(emptyEnv, nil, 0o600); err != nil {
		return nil, err
	}
	env := append(minimalEnv(),
		"BRIDGE_ENV_FILE="+emptyEnv,
		"MCP_PATH_SECRET="+benchSecret,
		"DEEPSEEK_API_KEY="+benchKey,
		"DEEPSEEK_BASE_URL="+doubleURL,
		"HOST=127.0.0.1", "PORT=0",
		"BRIDGE_STATE_DIR="+stateDir,
		"BRIDGE_LOG_LEVEL=info",
		"RATE_LIMIT_PER_MINUTE=1000000",
		"BRIDGE_CLAUDE_BIN="+o.HarnessBin,
		"DEEPSEEK_ALLOWED_ROOTS="+roots,
		"BRIDGE_SYNC_WINDOW_MS=500",
		"BRIDGE_MAX_QUEUE=64",
	)
	// Agent jobs are refused while the OS sandbox cannot run; the stand-in
	// never uses it, so without bubblewrap the bench turns it off (and says so).
	if _, err := exec.LookPath("bwrap"); err != nil {
		env = append(env, "BRIDGE_SANDBOX=off")
		rep.SandboxOff = true
	}
	b, err := startBridge(ctx, o.BridgeBin, env, tmp)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	r := &runner{o: o, rep: rep, b: b, double: double, ws: ws, mcpURL: "http://" + b.addr + "/mcp/" + benchSecret, doubleURL: doubleURL}
	if err := r.all(ctx); err != nil {
		return rep, err
	}
	step(o, "stopping bridge serve (SIGTERM)")
	b.stop()
	rep.BridgeExit = b.cmd.ProcessState.String()
	rep.Elapsed = time.Since(start)
	return rep, nil
}

type runner struct {
	o         Options
	rep       *Report
	b         *bridgeProc
	double    *proc
	ws        string
	mcpURL    string
	doubleURL string

	finishedJob string // a job that ended done, for the poll phase
}

func step(o Options, format string, args ...any) {
	fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
}

func (r *runner) all(ctx context.Context) error {
	for _, phase := range []func(context.Context) error{r.idle, r.flash, r.saturation, r.spawn, r.poll, r.held} {
		if err := phase(ctx); err != nil {
			return err
		}
		if r.b.exited() {
			return fmt.Errorf("bridge serve exited during the run; its last output:\n%s", r.b.lastLines())
		}
	}
	return nil
}

// newTransport keeps up to conns idle connections, so every simulated client
// keeps its own, as separate hosts would.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute,
		DisableCompression: true, ForceAttemptHTTP2: false,
	}
}

// clients makes n initialized MCP clients sharing tr.
func (r *runner) clients(ctx context.Context, n int, tr *http.Transport) ([]*Client, error) {
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	cs := make([]*Client, n)
	for i := range cs {
		cs[i] = NewClient(r.mcpURL, hc)
		if err := cs[i].Initialize(ctx); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

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

// cellSlices is how many alternating floor/bridge slices a cell's measured
// time is cut into, so that other load on the machine (which comes and goes)
// weighs on both sides alike.
const cellSlices = 4

// cell measures deepseek_flash through the bridge and the same request
// straight to the double, n clients each, in alternating slices, with the
// CPU time the bridge and the double spent on each side.
func (r *runner) cell(ctx context.Context, n int, warmup, measure time.Duration, maxReq int) (FlashCell, error) {
	cell := FlashCell{Clients: n}
	ftr, btr := newTransport(n), newTransport(n)
	defer ftr.CloseIdleConnections()
	defer btr.CloseIdleConnections()
	floor, err := NewFloorClient(r.doubleURL, benchKey, deepseek.DefaultModel, deepseek.DefaultMaxOutputTokens, flashTask, &http.Client{Transport: ftr, Timeout: time.Minute})
	if err != nil {
		return cell, err
	}
	cs, err := r.clients(ctx, n, btr)
	if err != nil {
		return cell, err
	}
	floorDo := func(ctx context.Context, _ int) error {
		_, err := floor.Do(ctx)
		return err
	}
	bridgeDo := func(ctx context.Context, w int) error { return flashCall(ctx, cs[w]) }
	slice := measure / cellSlices
	for i := range cellSlices {
		w := time.Duration(0)
		if i == 0 {
			w = warmup
		}
		for _, side := range []struct {
			do  func(context.Context, int) error
			res *LoadResult
			cpu *SideCPU
		}{{floorDo, &cell.Floor, &cell.FloorCPU}, {bridgeDo, &cell.Bridge, &cell.BridgeCPU}} {
			before, err := r.cpu()
			if err != nil {
				return cell, err
			}
			lr := ClosedLoop(ctx, n, w, slice, maxReq/cellSlices, side.do)
			after, err := r.cpu()
			if err != nil {
				return cell, err
			}
			side.cpu.add(after.sub(before))
			side.res.merge(lr)
		}
	}
	for _, lr := range []LoadResult{cell.Floor, cell.Bridge} {
		if lr.Errors > 0 {
			return cell, fmt.Errorf("%d clients: %d failed requests, first: %v", n, lr.Errors, lr.FirstErr)
		}
		if len(lr.Lat) == 0 {
			return cell, fmt.Errorf("%d clients: no request finished", n)
		}
	}
	return cell, ctx.Err()
}

// SideCPU is the CPU time the bridge, the double and the load driver spent
// during one side's slices of a cell (their warm-up included).
type SideCPU struct{ Bridge, Double, Driver time.Duration }

func (c *SideCPU) add(o SideCPU) {
	c.Bridge += o.Bridge
	c.Double += o.Double
	c.Driver += o.Driver
}

func (c SideCPU) sub(o SideCPU) SideCPU {
	return SideCPU{Bridge: c.Bridge - o.Bridge, Double: c.Double - o.Double, Driver: c.Driver - o.Driver}
}

// Total is the CPU of all three processes.
func (c SideCPU) Total() time.Duration { return c.Bridge + c.Double + c.Driver }

// cpu reads the CPU time the bridge, the double and this load driver have
// used so far.
func (r *runner) cpu() (SideCPU, error) {
	var c SideCPU
	var err error
	if c.Bridge, err = CPUTime(r.b.pid()); err != nil {
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
		step(r.o, "deepseek_flash latency, %d clients: floor and bridge alternating, %s each", n, r.o.CellDuration)
		c, err := r.cell(ctx, n, r.o.Warmup, r.o.CellDuration, r.o.CellMaxRequests)
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
	c, err := r.cell(ctx, r.o.SaturationClients, r.o.Warmup, r.o.SaturationDuration, 1<<30)
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

// agentPayload is the part of the agent tools' structuredContent the bench reads.
type agentPayload struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"`
	Nonce  string `json:"nonce"`
	Error  string `json:"error"`
}

func agentCall(ctx context.Context, c *Client, tool string, args map[string]any) (agentPayload, error) {
	var p agentPayload
	res, err := c.CallTool(ctx, tool, args)
	if err != nil {
		return p, err
	}
	if res.IsError {
		return p, fmt.Errorf("%s answered an error: %.300s", tool, res.Text)
	}
	if err := json.Unmarshal(res.Structured, &p); err != nil {
		return p, fmt.Errorf("%s: structuredContent: %w", tool, err)
	}
	return p, nil
}

func readStart(dir, id string) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(dir, "standin-"+id+".start"))
	if err != nil {
		return time.Time{}, fmt.Errorf("the stand-in harness left no start time for job %s (did the bridge run it? BRIDGE_CLAUDE_BIN): %w", id, err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// spawn times deepseek_agent_start → stand-in running, and the same for a
// bare exec of the stand-in (the floor: fork, exec and Go start-up).
func (r *runner) spawn(ctx context.Context) error {
	step(r.o, "agent start → harness spawn: %d jobs, then %d bare execs of the stand-in", r.o.SpawnSamples, r.o.SpawnSamples)
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, 1, tr)
	if err != nil {
		return err
	}
	var lat []time.Duration
	for range r.o.SpawnSamples {
		t0 := time.Now()
		p, err := agentCall(ctx, cs[0], "deepseek_agent_start", map[string]any{"task": "bench: spawn", "workspace": r.ws})
		if err != nil {
			return err
		}
		if p.Status != "done" || p.Nonce == "" {
			return fmt.Errorf("stand-in job %s ended %s (%s), want done with a nonce", p.JobID, p.Status, p.Error)
		}
		t1, err := readStart(r.ws, p.JobID)
		if err != nil {
			return err
		}
		lat = append(lat, t1.Sub(t0))
		r.rep.JobsStarted++
		if r.finishedJob == "" {
			r.finishedJob = p.JobID
		}
	}
	r.rep.Spawn = sorted(lat)

	lat = lat[:0]
	task, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "bench: spawn"}})
	for i := range r.o.SpawnSamples {
		id := fmt.Sprintf("floor-%d", i)
		cmd := exec.CommandContext(ctx, r.o.HarnessBin, "-p", "--output-format", "stream-json")
		cmd.Dir = r.ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "BRIDGE_JOB_ID=" + id}
		cmd.Stdin = strings.NewReader(string(task) + "\n")
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bare stand-in: %w: %s", err, out)
		}
		t1, err := readStart(r.ws, id)
		if err != nil {
			return err
		}
		lat = append(lat, t1.Sub(t0))
	}
	r.rep.SpawnFloor = sorted(lat)
	return nil
}

func sorted(l []time.Duration) Latencies {
	out := append(Latencies(nil), l...)
	slices.Sort(out)
	return out
}

// poll times deepseek_agent_poll on a finished job, one client, serially.
func (r *runner) poll(ctx context.Context) error {
	step(r.o, "agent poll of a finished job: %d polls, one client", r.o.PollSamples)
	if r.finishedJob == "" {
		return errors.New("no finished job to poll")
	}
	tr := newTransport(1)
	defer tr.CloseIdleConnections()
	cs, err := r.clients(ctx, 1, tr)
	if err != nil {
		return err
	}
	args := map[string]any{"job_id": r.finishedJob, "wait_seconds": 0}
	for range 100 { // warm-up
		if _, err := agentCall(ctx, cs[0], "deepseek_agent_poll", args); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, 0, r.o.PollSamples)
	for range r.o.PollSamples {
		t0 := time.Now()
		p, err := agentCall(ctx, cs[0], "deepseek_agent_poll", args)
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if p.Status != "done" {
			return fmt.Errorf("poll of finished job %s: status %s", r.finishedJob, p.Status)
		}
		lat = append(lat, d)
	}
	r.rep.Poll = sorted(lat)
	return nil
}

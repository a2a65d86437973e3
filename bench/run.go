package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek/deepseektest"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/tools"
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
	MinProxyBin                      string // the minimal proxy (bench/minproxy), the second floor

	Concurrency     []int         // flash latency cells (clients)
	Warmup          time.Duration // unmeasured start of each cell
	CellDuration    time.Duration // measured part of each cell…
	CellMaxRequests int           // …or until this many answers, whichever first

	SaturationClients  int           // clients of the throughput run
	SaturationDuration time.Duration // its measured part

	PollSamples  int // serial polls of a finished job
	SpawnSamples int // jobs timed from start to the stand-in running
	HeldPolls    int // concurrent long-polls held on one running job
	// IdleProcs idle processes are started for the second measure of the
	// bridge's CPU per job (0: not measured), JobCPUSamples jobs each.
	IdleProcs, JobCPUSamples int
	HeldWait                 time.Duration // their wait_seconds (≤ tools.MaxPollWait)

	// ProfileDir, when set, gets a CPU profile of the bridge taken during an
	// extra (unmeasured) run at the highest concurrency, and a heap and
	// goroutine profile while the long-polls are held.
	ProfileDir string

	Progress io.Writer // one line per phase (nil = none)
}

// DefaultOptions: 1, 8 and 64 clients for 4 s each, 5 s at saturation,
// 1,000 held polls; the whole run takes about a minute and a half.
func DefaultOptions() Options {
	return Options{
		Concurrency: []int{1, 8, 64}, Warmup: 500 * time.Millisecond, CellDuration: 4 * time.Second, CellMaxRequests: 20000,
		SaturationClients: 128, SaturationDuration: 5 * time.Second,
		PollSamples: 2000, SpawnSamples: 30, HeldPolls: 1000, HeldWait: tools.MaxPollWait,
		IdleProcs: 5000, JobCPUSamples: 40,
	}
}

// FlashCell is one concurrency level of deepseek_flash against its floors:
// the direct client (Floor) and the minimal proxy (MinProxy; empty in the
// saturation run).
type FlashCell struct {
	Clients                          int
	Bridge, Floor, MinProxy          LoadResult
	BridgeCPU, FloorCPU, MinProxyCPU SideCPU // CPU used during each side's slices
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

	Poll       Latencies // poll of a finished job
	Spawn      Latencies // deepseek_agent_start sent → stand-in running
	SpawnFloor Latencies // exec of the stand-in → stand-in running
	// SpawnBwrapFloor: the same inside a minimal bubblewrap of its own
	// (empty when bubblewrap is missing).
	SpawnBwrapFloor Latencies
	Spawn5000       Latencies // the same as Spawn, in a workspace of 5,000 files
	JobCPU          *JobCPU   // the bridge's CPU per job, with few and many processes (nil: not measured)
	SpawnDone       Latencies // deepseek_agent_start sent → its answer, the job done (the stand-in ends at once)
	// Stages and Stages5000 are where each job's start went, from the
	// bridge's log, in the empty workspace and in the one of 5,000 files.
	Stages, Stages5000 []SpawnStages
	JobsStarted        int

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
	}{{"bridge", &o.BridgeBin}, {"deepseek-double", &o.DoubleBin}, {"stand-in harness", &o.HarnessBin}, {"minimal proxy", &o.MinProxyBin}} {
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

	step(o, "starting deepseek-double, the minimal proxy and bridge serve")
	double, doubleURL, err := startListener(ctx, "deepseek-double", o.DoubleBin, []string{"--addr", "127.0.0.1:0", "--key", benchKey}, tmp)
	if err != nil {
		return nil, err
	}
	defer double.stop()
	minProxy, minURL, err := startListener(ctx, "minimal proxy", o.MinProxyBin, []string{"--addr", "127.0.0.1:0", "--upstream", doubleURL, "--key", benchKey}, tmp)
	if err != nil {
		return nil, err
	}
	defer minProxy.stop()
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
	r := &runner{o: o, rep: rep, b: b, double: double, minProxy: minProxy, ws: ws,
		mcpURL: "http://" + b.addr + "/mcp/" + benchSecret, doubleURL: doubleURL, minURL: minURL}
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
	minProxy  *proc
	ws        string
	mcpURL    string
	doubleURL string
	minURL    string // the minimal proxy's endpoint

	finishedJob string // a job that ended done, for the poll phase
}

func step(o Options, format string, args ...any) {
	fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
}

func (r *runner) all(ctx context.Context) error {
	for _, phase := range []func(context.Context) error{r.idle, r.flash, r.saturation, r.spawn, r.jobCPU, r.poll, r.held} {
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

// clients makes n initialized MCP clients of the bridge sharing tr.
func (r *runner) clients(ctx context.Context, n int, tr *http.Transport) ([]*Client, error) {
	return clientsOf(ctx, r.mcpURL, n, tr)
}

// clientsOf makes n initialized MCP clients of url sharing tr.
func clientsOf(ctx context.Context, url string, n int, tr *http.Transport) ([]*Client, error) {
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	cs := make([]*Client, n)
	for i := range cs {
		cs[i] = NewClient(url, hc)
		if err := cs[i].Initialize(ctx); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

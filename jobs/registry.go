// Package jobs is the agent-job registry of one daemon: it admits a workspace,
// queues and runs jobs through a Harness, enforces their ceilings, tells the
// truth about how each ended, and keeps a snapshot of every job in the state
// dir so a restart or bridgectl can see it.
//
// registry.go holds the calls (Start, Wait, Cancel, Close); run.go one job's
// run from its slot to its end; fold.go what each harness event changes in
// a snapshot; slots.go the running slots and the queue; persist.go the
// snapshot files and their expiry; damaged.go snapshots it cannot read;
// stop.go why a job ended; workspace.go the guard it runs jobs through and
// what a job changed on disk.
package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/review"
)

// Bounds of a job's request and of its reason for ending.
const (
	maxTaskBytes    = 256 << 10
	maxErrorText    = 2000
	DefaultInterval = time.Second // trace snapshot throttle
)

// Errors of Start, Cancel and Get; their messages are written for the caller.
var (
	ErrQueueFull = errors.New("the job queue is full")
	ErrClosed    = errors.New("the bridge is shutting down; no new jobs are accepted")
	ErrBadInput  = errors.New("invalid job request")
)

// ModelGateway hands each job its model endpoint and credentials. The daemon
// uses its per-job model proxy: each job gets its own revocable token, never
// the real key, and the proxy reports usage on Close.
//
// Revoke must not block: the registry calls it the moment a job is stopped
// (cancel, ceiling, shutdown), before the harness has been reaped, so the
// job's credentials die at once; Close follows once the harness is gone and
// returns the final usage (calls in flight at Revoke still count).
type ModelGateway interface {
	Open(jobID string) (baseURL, token string, err error)
	Revoke(jobID string)
	Close(jobID string) (Metered, error)
}

// Metered is what a gateway counted for one job: its tokens and their cost,
// each answer priced at the model that gave it. A zero Metered means the
// gateway does not count (the harness's own numbers are used).
type Metered struct {
	Usage   Usage
	CostUSD float64
	// UpstreamError is the class (ModelRateLimit, …) of the upstream's last
	// answer to the job when that was an error ("" when it was not).
	UpstreamError string
}

// StartRequest is one deepseek_agent_start call.
type StartRequest struct {
	Task       string
	Workspace  string
	MaxSteps   int           // 0 = the ceiling; never above it
	Timeout    time.Duration // 0 = the ceiling; never above it
	Model      string        // "" = Options.Model
	Thinking   string        // deepseek.ThinkingLevels; "" = DeepSeek's default (high)
	Policy     *policy.Policy
	Context    string  // told the harness after the task
	Acceptance []Check // read against the job's tool calls (ValidateChecks)
	// Review, when set, makes the job a review (ReviewRequest): Task and
	// Policy are then the review's.
	Review *ReviewRequest
}

// Registry runs the jobs of one daemon.
type Registry struct {
	opts   Options
	log    zerolog.Logger
	ctx    context.Context // ends on Close: every harness is stopped
	cancel context.CancelFunc
	wg     sync.WaitGroup // job runners and the sweeper

	mu      sync.Mutex
	jobs    map[string]*job
	damaged map[string]string // id → why its snapshot could not be taken as a job
	scoping map[string]int    // workspaces whose review scope is being computed (scopeIn)
	slots   slots
	closed  bool
	writes  pendingWrites
}

// job is one job's state; everything but persistMu and written is guarded
// by Registry.mu.
type job struct {
	id       string
	progress               // its snapshot and what folding its harness events keeps
	changed  chan struct{} // closed and replaced on every change
	done     chan struct{} // closed once the job is final
	timeout  time.Duration

	run harness.Run
	// prompt, when set, is the harness's task in place of harnessTask's
	// (a review's: too large for the snapshot's task).
	prompt string
	ledger *ledgerReader // the approval child's verdicts; used by the job's runner only
	stop   *Stop         // set by the first stop request: why the job ends
	slot   bool          // holds a running slot

	seq        uint64 // snapshot version, bumped on every change
	traceTimer *time.Timer
	lastWrite  time.Time
	removed    bool
	retrying   bool // its last write failed; retryWrites runs

	persistMu sync.Mutex // serialises this job's file writes
	written   uint64     // last seq written

	spawnTimes spawnTimes    // its record under Registry.mu, the runner's stages by the runner alone
	recorded   chan struct{} // closed once Start's snapshot write returned: the harness spawns after it
}

// New loads the jobs the state dir remembers — finished ones stay pollable
// until their TTL, ones that were running or queued become interrupted — and
// starts the TTL sweeper. Close must be called.
func New(opts Options) (*Registry, error) {
	if opts.Dir.Root == "" {
		return nil, errors.New("jobs: no state dir")
	}
	if opts.Harness == nil || opts.Gateway == nil || opts.Guard == nil {
		return nil, errors.New("jobs: a Harness, a ModelGateway and a Guard are required")
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = config.DefaultMaxConcurrent
	}
	if opts.MaxQueue < 0 {
		opts.MaxQueue = 0
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = config.DefaultMaxSteps
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = config.DefaultJobTimeout
	}
	if opts.ResultTTL < opts.JobTimeout {
		opts.ResultTTL = opts.JobTimeout
	}
	if opts.TraceInterval <= 0 {
		opts.TraceInterval = DefaultInterval
	}
	for _, d := range []string{opts.Dir.Jobs(), opts.Dir.HarnessRoot()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
	}
	r := &Registry{
		opts: opts, jobs: map[string]*job{}, damaged: map[string]string{}, log: zerolog.Nop(),
		slots: slots{max: opts.MaxConcurrent, maxQueue: opts.MaxQueue},
	}
	if opts.Logger != nil {
		r.log = opts.Logger.With().Str("component", "jobs").Logger()
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.reload(); err != nil {
		r.cancel()
		return nil, err
	}
	r.removeOrphanHarnessDirs()
	r.wg.Add(1)
	go r.sweep()
	return r, nil
}

func (r *Registry) newJob(snap Snapshot) *job {
	return &job{
		id:       snap.ID,
		progress: newProgress(snap, r.price(cmp.Or(snap.Model, r.opts.Model))),
		changed:  make(chan struct{}),
		done:     make(chan struct{}),
		recorded: make(chan struct{}),
	}
}

// Start admits, records and queues (or starts) a job. It never waits for the
// job: ctx only bounds the admission, and a caller hanging up later changes
// nothing.
func (r *Registry) Start(ctx context.Context, req StartRequest) (Snapshot, error) {
	return r.start(ctx, req, nil)
}

// start is Start, or Continue when parent is set: the job then runs in the
// parent's workspace under its policy (narrowed by req.Policy) and resumes
// its session.
func (r *Registry) start(ctx context.Context, req StartRequest, parent *Snapshot) (Snapshot, error) {
	accepted := time.Now()
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	task := strings.TrimSpace(req.Task)
	switch {
	case task == "" && req.Review == nil:
		return Snapshot{}, fmt.Errorf("%w: task is empty: say what the agent should do", ErrBadInput)
	case len(req.Task) > maxTaskBytes:
		return Snapshot{}, fmt.Errorf("%w: task is %d bytes, at most %d: put long material in a file in the workspace and refer to it", ErrBadInput, len(req.Task), maxTaskBytes)
	case req.MaxSteps < 0:
		return Snapshot{}, fmt.Errorf("%w: max_steps must be positive (at most %d)", ErrBadInput, r.opts.MaxSteps)
	case req.Timeout < 0:
		return Snapshot{}, fmt.Errorf("%w: timeout_seconds must be positive (at most %d)", ErrBadInput, int(r.opts.JobTimeout/time.Second))
	}
	if req.Review != nil {
		if parent != nil {
			return Snapshot{}, fmt.Errorf("%w: a continued job cannot become a review", ErrBadInput)
		}
		rp := review.Policy()
		req.Policy = &rp
	}
	var enforced policy.Enforced
	var err error
	if parent != nil {
		req.Workspace = parent.Workspace
		req.Model, req.Thinking = cmp.Or(req.Model, parent.Model), cmp.Or(req.Thinking, parent.Thinking)
		enforced, err = r.narrowed(parent.Policy, req.Policy)
	} else {
		enforced, err = r.enforced(req.Policy)
	}
	if err != nil {
		return Snapshot{}, err
	}
	ws, err := r.opts.Guard.Admit(req.Workspace)
	if err != nil {
		return Snapshot{}, err
	}
	var rv *ReviewState
	var prompt string
	if req.Review != nil {
		// The daemon's git reads the workspace for the scope: never while a
		// job holds it, and no job starts there meanwhile.
		release, err := r.scopeIn(ws)
		if err != nil {
			return Snapshot{}, err
		}
		rv, req.Task, prompt, err = r.reviewTask(ws, req.Review, enforced.Denied)
		release()
		if err != nil {
			return Snapshot{}, err
		}
	}
	maxSteps := r.opts.MaxSteps
	for _, n := range []int{req.MaxSteps, enforced.MaxSteps} {
		if n > 0 && n < maxSteps {
			maxSteps = n
		}
	}
	timeout := r.opts.JobTimeout
	for _, d := range []time.Duration{req.Timeout, time.Duration(enforced.TimeoutSeconds * float64(time.Second))} {
		if d > 0 && d < timeout {
			timeout = d
		}
	}
	thinking := cmp.Or(req.Thinking, deepseek.DefaultThinking)
	id, err := ids.New()
	if err != nil {
		return Snapshot{}, fmt.Errorf("job id: %w", err)
	}
	now := time.Now()
	j := r.newJob(Snapshot{
		Version: SnapshotVersion, ID: id, Status: StatusQueued, Task: req.Task, Workspace: ws,
		CreatedAt: now, MaxSteps: maxSteps, TimeoutMS: timeout.Milliseconds(),
		FilesWritten: []string{}, Commands: []Command{},
		Model: cmp.Or(req.Model, r.opts.Model), Thinking: thinking, Policy: &enforced,
		Context: req.Context, Acceptance: newChecks(req.Acceptance), Review: rv,
	})
	j.prompt = prompt
	if parent != nil {
		j.snap.Parent, j.snap.ResumeSession = parent.ID, parent.SessionID
		j.snap.Review = parent.Review // a review's continuation is read against the same scope
	}
	j.timeout = timeout
	j.spawnTimes = spawnTimes{accepted: accepted, admission: time.Since(accepted)}

	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return Snapshot{}, ErrClosed
	case r.slots.full():
		running, queued := r.slots.running, len(r.slots.queue)
		r.mu.Unlock()
		return Snapshot{}, fmt.Errorf("%w: %d jobs are running and %d are waiting (BRIDGE_MAX_CONCURRENT=%d, BRIDGE_MAX_QUEUE=%d); try again when one has finished", ErrQueueFull, running, queued, r.opts.MaxConcurrent, r.opts.MaxQueue)
	}
	if err := r.busyLocked(ws); err != nil {
		r.mu.Unlock()
		return Snapshot{}, err
	}
	if parent != nil {
		if err := r.continuableLocked(parent.ID); err != nil {
			r.mu.Unlock()
			return Snapshot{}, err
		}
	}
	r.jobs[id] = j
	if r.slots.free() {
		r.launchLocked(j)
		// The runner opens the job's token and writes its harness files while
		// the record below reaches the disk; it spawns the harness only once
		// the record is there (j.recorded).
		go r.runJob(j) // owner: the registry (r.wg, joined by Close)
	} else {
		r.slots.enqueue(j)
		j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "queued"})
	}
	recorded := time.Now()
	snap := r.commitLocked(j, tellNobody) // nobody knows its id yet
	j.spawnTimes.record = time.Since(recorded)
	close(j.recorded)
	r.mu.Unlock()
	r.log.Info().Str("job", id).Str("workspace", ws).Str("status", string(snap.Status)).Msg("job accepted")
	return snap, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// notifyLocked wakes everyone waiting on a change of j.
func (r *Registry) notifyLocked(j *job) {
	close(j.changed)
	j.changed = make(chan struct{})
}

// snapshotLocked is j's snapshot as callers see it (queue position filled in).
func (r *Registry) snapshotLocked(j *job) Snapshot {
	s := j.snap.clone()
	s.QueuePosition = 0
	if s.Status == StatusQueued {
		s.QueuePosition = r.slots.position(j)
	}
	return s
}

// Get returns a job's snapshot.
func (r *Registry) Get(id string) (Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return Snapshot{}, r.unknownLocked(id)
	}
	return r.snapshotLocked(j), nil
}

// List returns every job the registry holds, oldest first, without traces.
func (r *Registry) List() []Snapshot {
	r.mu.Lock()
	out := make([]Snapshot, 0, len(r.jobs))
	for _, j := range r.jobs {
		s := r.snapshotLocked(j)
		s.Trace = nil
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, k int) bool { return out[i].CreatedAt.Before(out[k].CreatedAt) })
	return out
}

// Wait returns the job's snapshot once it is final, or when d has passed, or
// ctx ended (then with the state of that moment). onChange, if set, sees the
// job's state at the start of the wait (unless it is final) and then every
// intermediate snapshot (for progress), so a caller that stops waiting on a
// state — waiting_approval — sees it even when the job is in it already.
func (r *Registry) Wait(ctx context.Context, id string, d time.Duration, onChange func(Snapshot)) (Snapshot, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	if onChange != nil {
		r.mu.Lock()
		j, ok := r.jobs[id]
		var s Snapshot
		if ok {
			s = r.snapshotLocked(j)
		}
		r.mu.Unlock()
		if ok && !s.Status.Final() {
			onChange(s)
		}
	}
	for {
		r.mu.Lock()
		j, ok := r.jobs[id]
		if !ok {
			err := r.unknownLocked(id)
			r.mu.Unlock()
			return Snapshot{}, err
		}
		snap, changed, settled := r.snapshotLocked(j), j.changed, isClosed(j.done)
		r.mu.Unlock()
		if settled { // final, and on disk
			return snap, nil
		}
		select {
		case <-changed:
			if onChange != nil {
				r.mu.Lock()
				s := r.snapshotLocked(j)
				r.mu.Unlock()
				if !s.Status.Final() {
					onChange(s)
				}
			}
		case <-timer.C:
			return r.Get(id)
		case <-ctx.Done():
			return r.Get(id)
		}
	}
}

// SetWaiting flips a running job to waiting_approval with a (or back to
// running when a is nil).
func (r *Registry) SetWaiting(id string, a *ApprovalInfo) {
	r.mu.Lock()
	j, ok := r.jobs[id]
	if !ok || j.snap.Status.Final() || j.snap.Status == StatusQueued || j.stop != nil {
		r.mu.Unlock()
		return
	}
	if a != nil {
		c := *a
		j.snap.Status, j.snap.Approval = StatusWaitingApproval, &c
		j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: time.Now(), Kind: "state", Detail: "waiting_approval: " + harness.Clip(a.Summary, 200)})
	} else {
		if j.snap.Status != StatusWaitingApproval {
			r.mu.Unlock()
			return
		}
		j.snap.Status, j.snap.Approval = StatusRunning, nil
		j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: time.Now(), Kind: "state", Detail: "running"})
	}
	markWaiting(j.snap.Commands, a != nil)
	r.commitLocked(j, tellWaiters)
	r.mu.Unlock()
}

// Close stops accepting jobs, stops every harness, marks those jobs (and the
// queued ones) interrupted, and waits for their runners, and for snapshot
// writes still being retried, until ctx ends.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	queued := r.slots.drain()
	for _, j := range queued {
		r.endLocked(j, failed(StopInterruptedByRestart, "the bridge shut down before the job started"))
	}
	for _, j := range r.jobs {
		if !j.snap.Status.Final() {
			r.stopLocked(j, Stop{Reason: StopInterruptedByRestart, Text: "the bridge shut down while the job was running"})
		}
	}
	for _, j := range queued {
		r.commitLocked(j, tellSettled)
	}
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.waitWrites(ctx)
		return fmt.Errorf("jobs: shutdown: %w", ctx.Err())
	}
	if n := r.waitWrites(ctx); n > 0 {
		return fmt.Errorf("jobs: shutdown: the snapshots of %d jobs could not be written (the log says which): %w", n, ctx.Err())
	}
	return nil
}

// Package jobs is the agent-job registry of one daemon: it admits a workspace,
// queues and runs jobs through a Harness, enforces their ceilings, tells the
// truth about how each ended, and keeps a snapshot of every job in the state
// dir so a restart or bridgectl can see it.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/deepseek"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Bounds of what the registry keeps per job.
const (
	MaxTrace        = 500 // trace entries kept (the oldest are dropped)
	MaxCommands     = 200
	MaxFiles        = 200
	maxNotes        = 5
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
// uses the per-job model proxy (cmd/bridge): each job gets its own revocable
// token, never the real key, and the proxy reports usage on Close.
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
}

// Options configure a Registry. Zero limits take the config defaults.
type Options struct {
	Dir     statedir.Dir
	Harness harness.Harness
	Gateway ModelGateway
	Model   string // DEEPSEEK_MODEL: the harness's model and the price of its usage

	MaxConcurrent int // BRIDGE_MAX_CONCURRENT (default 2)
	MaxQueue      int // BRIDGE_MAX_QUEUE (0 = no queue: busy means refused)
	MaxSteps      int // BRIDGE_MAX_STEPS (default 120)
	JobTimeout    time.Duration
	ResultTTL     time.Duration // never shorter than JobTimeout
	TraceInterval time.Duration // snapshot writes while running, at most one per interval

	// Guard admits each workspace and prepares each harness spec.
	Guard Guard

	Logger *zerolog.Logger
}

// StartRequest is one deepseek_agent_start call.
type StartRequest struct {
	Task      string
	Workspace string
	MaxSteps  int           // 0 = the ceiling; never above it
	Timeout   time.Duration // 0 = the ceiling; never above it
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
	queue   []*job
	running int
	closed  bool
}

type job struct {
	id      string
	snap    Snapshot      // guarded by Registry.mu
	changed chan struct{} // closed and replaced on every change
	done    chan struct{} // closed once the job is final
	timeout time.Duration

	run        harness.Run
	stopStatus Status // set by the first stop request: what the job ends as
	stopReason string
	result     *harness.Result
	tools      map[string]harness.ToolUse // tool_use id → call, for matching results
	cmdAt      map[string]int             // Bash tool_use id → its index in snap.Commands
	msgUsage   map[string]harness.Usage   // per model message, until the result line
	notes      []string
	tally      map[string]int
	touched    []string
	slot       bool // holds a running slot

	seq        uint64 // snapshot version, bumped on every change
	traceTimer *time.Timer
	lastWrite  time.Time
	removed    bool

	persistMu sync.Mutex // serialises this job's file writes
	written   uint64     // last seq written
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
		opts.MaxConcurrent = 2
	}
	if opts.MaxQueue < 0 {
		opts.MaxQueue = 0
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = 120
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = 30 * time.Minute
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
	r := &Registry{opts: opts, jobs: map[string]*job{}, log: zerolog.Nop()}
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

// reload turns the snapshots on disk into jobs.
func (r *Registry) reload() error {
	snaps, errs := LoadAll(r.opts.Dir)
	for _, err := range errs {
		var fe *ForeignVersionError
		if errors.As(err, &fe) {
			if s, ok := r.adoptForeign(fe); ok {
				snaps = append(snaps, s)
			}
			continue
		}
		r.log.Warn().Err(err).Msg("skipping unreadable job snapshot; its harness dir is kept")
	}
	now := time.Now()
	for _, s := range snaps {
		j := newJob(s.ID)
		j.snap = s
		if !s.Status.Final() {
			// The daemon that ran it is gone; so must be its harness tree.
			if n := harness.KillJobProcesses(s.ID); n > 0 {
				r.log.Warn().Str("job", s.ID).Int("processes", n).Msg("killed leftover harness processes of an interrupted job")
			}
			settleCommands(j.snap.Commands, s.Status == StatusWaitingApproval)
			j.snap.Status = StatusInterrupted
			j.snap.Error = fmt.Sprintf("the bridge stopped while the job was %s; it did not finish", s.Status)
			j.snap.Nonce, j.snap.Result, j.snap.Approval = "", "", nil
			j.snap.Partial = partialFromSnapshot(&j.snap)
			j.snap.EndedAt = &now
			exp := now.Add(r.opts.ResultTTL)
			j.snap.ExpiresAt = &exp
			j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "interrupted: the bridge restarted"})
			close(j.done)
			r.jobs[s.ID] = j
			j.seq++
			if err := r.write(j, j.snap.clone(), j.seq); err != nil {
				return err
			}
			continue
		}
		if s.ExpiresAt != nil && now.After(*s.ExpiresAt) {
			r.removeFiles(s.ID)
			continue
		}
		close(j.done)
		r.jobs[s.ID] = j
	}
	return nil
}

// adoptForeign reads the little every snapshot version shares (id, status,
// task, workspace, created_at) from a snapshot of a foreign format version.
// A job it says was unfinished is handed to reload, which marks it
// interrupted, kills its leftover processes and rewrites the file in this
// build's format (no daemon runs it: the state dir's lock is held by this
// one). A finished one, or one that does not parse that far, is left as it is
// and logged; its harness dir is kept.
func (r *Registry) adoptForeign(fe *ForeignVersionError) (Snapshot, bool) {
	var old struct {
		ID        string    `json:"id"`
		Status    Status    `json:"status"`
		Task      string    `json:"task"`
		Workspace string    `json:"workspace"`
		CreatedAt time.Time `json:"created_at"`
	}
	log := r.log.Warn().Str("file", fe.Path).Int("version", fe.Version)
	if err := statedir.ReadJSON(fe.Path, &old); err != nil || old.ID != fe.ID || old.Status == "" {
		log.Msg("job snapshot of a foreign format version left as it is (it does not parse as a job); its harness dir is kept")
		return Snapshot{}, false
	}
	if old.Status.Final() {
		log.Str("status", string(old.Status)).Msg("finished job snapshot of a foreign format version left as it is; its harness dir is kept")
		return Snapshot{}, false
	}
	log.Str("status", string(old.Status)).Msg("unfinished job snapshot of a foreign format version: marking it interrupted in this build's format")
	return Snapshot{
		Version: SnapshotVersion, ID: old.ID, Status: old.Status, Task: old.Task, Workspace: old.Workspace,
		CreatedAt: old.CreatedAt, FilesWritten: []string{}, Commands: []Command{},
	}, true
}

func newJob(id string) *job {
	return &job{
		id:       id,
		changed:  make(chan struct{}),
		done:     make(chan struct{}),
		tools:    map[string]harness.ToolUse{},
		cmdAt:    map[string]int{},
		msgUsage: map[string]harness.Usage{},
		tally:    map[string]int{},
	}
}

// Start admits, records and queues (or starts) a job. It never waits for the
// job: ctx only bounds the admission, and a caller hanging up later changes
// nothing.
func (r *Registry) Start(ctx context.Context, req StartRequest) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	task := strings.TrimSpace(req.Task)
	switch {
	case task == "":
		return Snapshot{}, fmt.Errorf("%w: task is empty: say what the agent should do", ErrBadInput)
	case len(req.Task) > maxTaskBytes:
		return Snapshot{}, fmt.Errorf("%w: task is %d bytes, at most %d: put long material in a file in the workspace and refer to it", ErrBadInput, len(req.Task), maxTaskBytes)
	case req.MaxSteps < 0:
		return Snapshot{}, fmt.Errorf("%w: max_steps must be positive (at most %d)", ErrBadInput, r.opts.MaxSteps)
	case req.Timeout < 0:
		return Snapshot{}, fmt.Errorf("%w: timeout_seconds must be positive (at most %d)", ErrBadInput, int(r.opts.JobTimeout/time.Second))
	}
	ws, err := r.opts.Guard.Admit(req.Workspace)
	if err != nil {
		return Snapshot{}, err
	}
	maxSteps := r.opts.MaxSteps
	if req.MaxSteps > 0 && req.MaxSteps < maxSteps {
		maxSteps = req.MaxSteps
	}
	timeout := r.opts.JobTimeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	id, err := randomHex(16)
	if err != nil {
		return Snapshot{}, fmt.Errorf("job id: %w", err)
	}
	now := time.Now()
	j := newJob(id)
	j.timeout = timeout
	j.snap = Snapshot{
		Version: SnapshotVersion, ID: id, Status: StatusQueued, Task: req.Task, Workspace: ws,
		CreatedAt: now, MaxSteps: maxSteps, TimeoutMS: timeout.Milliseconds(),
		FilesWritten: []string{}, Commands: []Command{},
	}

	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return Snapshot{}, ErrClosed
	case r.running >= r.opts.MaxConcurrent && len(r.queue) >= r.opts.MaxQueue:
		running, queued := r.running, len(r.queue)
		r.mu.Unlock()
		return Snapshot{}, fmt.Errorf("%w: %d jobs are running and %d are waiting (BRIDGE_MAX_CONCURRENT=%d, BRIDGE_MAX_QUEUE=%d); try again when one has finished", ErrQueueFull, running, queued, r.opts.MaxConcurrent, r.opts.MaxQueue)
	}
	r.jobs[id] = j
	if r.running < r.opts.MaxConcurrent {
		r.launchLocked(j)
	} else {
		r.queue = append(r.queue, j)
		j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "queued"})
	}
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	if err := r.write(j, snap, seq); err != nil {
		r.log.Error().Err(err).Str("job", id).Msg("snapshot write failed")
	}
	if snap.Status == StatusRunning {
		go r.runJob(j) // owner: the registry (r.wg, joined by Close)
	}
	r.log.Info().Str("job", id).Str("workspace", ws).Str("status", string(snap.Status)).Msg("job accepted")
	return snap, nil
}

// launchLocked moves j to running and accounts for its runner; the caller
// starts the runner (go r.runJob(j)) once the running snapshot is on disk.
func (r *Registry) launchLocked(j *job) {
	now := time.Now()
	r.running++
	j.slot = true
	j.snap.Status = StatusRunning
	j.snap.StartedAt = &now
	j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: "running"})
	r.wg.Add(1)
}

// outcome is how a run ended, before it is written into the snapshot.
type outcome struct {
	status Status
	reason string
	result string
	usage  *Metered
}

func (r *Registry) runJob(j *job) {
	defer r.wg.Done()
	baseURL, token, err := r.opts.Gateway.Open(j.id)
	if err != nil {
		r.finish(j, outcome{status: StatusError, reason: "could not open the model endpoint: " + err.Error()})
		return
	}
	out := r.execute(j, baseURL, token)
	if u, err := r.opts.Gateway.Close(j.id); err == nil {
		out.usage = &u
	} else {
		r.log.Warn().Err(err).Str("job", j.id).Msg("model gateway close")
	}
	r.finish(j, out)
}

// execute runs the harness to its end and says how the job ended.
func (r *Registry) execute(j *job, baseURL, token string) outcome {
	r.mu.Lock()
	spec := harness.Spec{
		JobID: j.id, Task: j.snap.Task, Workspace: j.snap.Workspace,
		ConfigDir: r.opts.Dir.HarnessDir(j.id), BaseURL: baseURL, Token: token, Model: r.opts.Model,
	}
	r.mu.Unlock()
	if err := r.opts.Guard.Prepare(r.ctx, &spec); err != nil {
		return outcome{status: StatusError, reason: "could not prepare the harness: " + err.Error()}
	}
	r.mu.Lock()
	if j.stopStatus != "" { // cancelled or shut down before the harness started
		out := outcome{status: j.stopStatus, reason: j.stopReason}
		r.mu.Unlock()
		return out
	}
	r.mu.Unlock()
	run, err := r.opts.Harness.Start(r.ctx, spec)
	if err != nil {
		return outcome{status: StatusError, reason: "could not start the agent harness: " + err.Error()}
	}
	r.mu.Lock()
	j.run = run
	j.snap.HarnessPID = run.PID()
	if j.stopStatus != "" { // cancelled or shut down while starting
		run.Stop()
	}
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	_ = r.write(j, snap, seq)

	timer := time.AfterFunc(j.timeout, func() {
		r.stop(j, StatusError, fmt.Sprintf("the job hit its wall-clock ceiling of %s and was stopped", j.timeout))
	})
	defer timer.Stop()
	for ev := range run.Events() {
		r.apply(j, ev)
	}
	exit := run.Wait()
	timer.Stop()

	r.mu.Lock()
	defer r.mu.Unlock()
	if j.stopStatus != "" {
		return outcome{status: j.stopStatus, reason: j.stopReason}
	}
	switch res := j.result; {
	case res.Succeeded():
		return outcome{status: StatusDone, result: res.Text}
	case res != nil:
		why := fmt.Sprintf("the agent harness ended without a successful result (%s", res.Subtype)
		if res.TerminalReason != "" && res.TerminalReason != "completed" {
			why += ", " + res.TerminalReason
		}
		why += ")"
		if res.Text != "" {
			why += ": " + res.Text
		} else if !res.IsError {
			why += ": its final answer was empty"
		}
		return outcome{status: StatusError, reason: why}
	default:
		why := fmt.Sprintf("the agent harness exited (code %d%s) without a result", exit.Code, sigSuffix(exit.Signal))
		if tail := lastLines(exit.Stderr, 5); tail != "" {
			why += "; its last stderr lines: " + tail
		}
		if exit.Err != nil {
			why += ": " + exit.Err.Error()
		}
		return outcome{status: StatusError, reason: why}
	}
}

func sigSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal " + sig
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// firstLine is the first non-empty line of s, clipped to n bytes.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return harness.Clip(l, n)
		}
	}
	return "(no output)"
}

// apply folds one harness event into the job.
func (r *Registry) apply(j *job, ev harness.Event) {
	r.mu.Lock()
	s := &j.snap
	switch ev.Kind {
	case harness.KindInit:
		s.SessionID = ev.SessionID
	case harness.KindUsage:
		j.msgUsage[ev.MessageID] = *ev.Usage
	case harness.KindText:
		j.notes = append(j.notes, ev.Text)
		if len(j.notes) > maxNotes {
			j.notes = j.notes[len(j.notes)-maxNotes:]
		}
		s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: ev.Time, Kind: "text", Detail: harness.Clip(ev.Text, 300)})
	case harness.KindToolUse:
		tu := *ev.ToolUse
		s.Steps++
		s.LastTool = tu.Name
		if tu.Detail != "" {
			s.LastTool += ": " + tu.Detail
		}
		j.tools[tu.ID] = tu
		j.tally[tu.Name]++
		// A command is listed as soon as it starts, so a job stopped while
		// it runs still reports it ("running" until its result, then a note
		// if the job ends first: settleCommands).
		if tu.Name == "Bash" && len(s.Commands) < MaxCommands {
			j.cmdAt[tu.ID] = len(s.Commands)
			s.Commands = append(s.Commands, Command{Command: tu.Command})
		}
		s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: ev.Time, Kind: "tool_use", Tool: tu.Name, Detail: tu.Detail})
		if s.Steps > s.MaxSteps {
			calls := "tool calls"
			if s.MaxSteps == 1 {
				calls = "tool call"
			}
			r.stopLocked(j, StatusError, fmt.Sprintf("the job hit its step ceiling of %d %s and was stopped", s.MaxSteps, calls))
		}
	case harness.KindToolResult:
		tr := ev.ToolResult
		tu, known := j.tools[tr.ToolUseID]
		delete(j.tools, tr.ToolUseID)
		entry := TraceEntry{Time: ev.Time, Kind: "tool_result", Tool: tu.Name, Detail: harness.Clip(tr.Text, 200), IsError: tr.IsError, Denied: tr.Denied}
		if known && tu.Name == "Bash" {
			entry.ExitCode = tr.ExitCode
			if i, ok := j.cmdAt[tr.ToolUseID]; ok {
				delete(j.cmdAt, tr.ToolUseID)
				s.Commands[i].ExitCode, s.Commands[i].Denied = tr.ExitCode, tr.Denied
				if tr.ExitCode == nil && !tr.Denied && tr.IsError {
					s.Commands[i].Note = notePrefixFailed + firstLine(tr.Text, 160)
				}
			}
		}
		// A file counts as written, or touched, only once its tool succeeded:
		// a refused or failed Write/Edit changed nothing.
		if ok := known && !tr.IsError && !tr.Denied; ok && tu.Path != "" {
			s.FilesWritten = addFile(s.FilesWritten, tu.Path)
			j.touched = addFile(j.touched, tu.Path)
		} else if ok && tu.Name == "Read" && tu.Detail != "" {
			j.touched = addFile(j.touched, tu.Detail)
		}
		s.Trace = appendTrace(s.Trace, &s.TraceDropped, entry)
	case harness.KindResult:
		j.result = ev.Result
		s.NumTurns = ev.Result.NumTurns
		if ev.Result.SessionID != "" {
			s.SessionID = ev.Result.SessionID
		}
		s.PermissionDenials = s.PermissionDenials[:0]
		for _, d := range ev.Result.PermissionDenials {
			s.PermissionDenials = append(s.PermissionDenials, Denial{ToolName: d.ToolName, ToolUseID: d.ToolUseID})
		}
	}
	r.setUsageLocked(j, nil)
	j.seq++
	r.notifyLocked(j)
	r.scheduleTraceLocked(j)
	r.mu.Unlock()
}

// setUsageLocked recomputes the job's usage: the gateway's count (and cost)
// if it has one, else the harness's result line, else the sum of its
// messages so far, priced at the configured model.
func (r *Registry) setUsageLocked(j *job, gw *Metered) {
	if gw != nil && !gw.Usage.IsZero() {
		j.snap.Usage, j.snap.CostUSD = gw.Usage, deepseek.RoundUSD(gw.CostUSD)
		return
	}
	var u Usage
	switch {
	case j.result != nil:
		u = fromHarness(j.result.Usage)
	default:
		var sum harness.Usage
		for _, mu := range j.msgUsage {
			sum = sum.Add(mu)
		}
		u = fromHarness(sum)
	}
	j.snap.Usage = u
	j.snap.CostUSD = deepseek.PriceFor(r.opts.Model).Cost(u.CacheReadTokens, u.InputTokens, u.OutputTokens)
}

func fromHarness(h harness.Usage) Usage {
	return Usage{
		InputTokens:     h.InputTokens + h.CacheCreationTokens,
		OutputTokens:    h.OutputTokens,
		CacheReadTokens: h.CacheReadTokens,
		ThinkingTokens:  h.ThinkingTokens,
	}
}

// scheduleTraceLocked writes the snapshot now if the last write is older than
// the interval, else once the interval has passed.
func (r *Registry) scheduleTraceLocked(j *job) {
	if j.traceTimer != nil || j.removed {
		return
	}
	wait := r.opts.TraceInterval - time.Since(j.lastWrite)
	if wait < 0 {
		wait = 0
	}
	j.traceTimer = time.AfterFunc(wait, func() {
		r.mu.Lock()
		j.traceTimer = nil
		if j.snap.Status.Final() || j.removed {
			r.mu.Unlock()
			return
		}
		j.lastWrite = time.Now()
		snap, seq := r.captureLocked(j)
		r.mu.Unlock()
		if err := r.write(j, snap, seq); err != nil {
			r.log.Error().Err(err).Str("job", j.id).Msg("trace snapshot write failed")
		}
	})
}

// stop asks a running job to end as status; the first request wins.
func (r *Registry) stop(j *job, status Status, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked(j, status, reason)
}

func (r *Registry) stopLocked(j *job, status Status, reason string) {
	if j.stopStatus != "" || j.snap.Status.Final() {
		return
	}
	j.stopStatus, j.stopReason = status, reason
	j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: time.Now(), Kind: "state", Detail: "stopping: " + reason})
	r.opts.Gateway.Revoke(j.id) // the token dies now, not once the harness is reaped
	if j.run != nil {
		j.run.Stop()
	}
}

// finish writes a run's outcome into the job and hands its slot on.
func (r *Registry) finish(j *job, out outcome) {
	r.mu.Lock()
	r.endLocked(j, out)
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	if err := r.write(j, snap, seq); err != nil {
		r.log.Error().Err(err).Str("job", j.id).Msg("final snapshot write failed")
	}
	r.mu.Lock()
	r.settleLocked(j)
	if j.slot {
		j.slot = false
		r.running--
	}
	started := r.startQueuedLocked()
	r.mu.Unlock()
	for _, q := range started { // running on disk first, then its pollers are told
		r.persist(q)
		r.mu.Lock()
		r.notifyLocked(q)
		r.mu.Unlock()
		go r.runJob(q) // owner: the registry (r.wg, joined by Close)
	}
	r.log.Info().Str("job", j.id).Str("status", string(snap.Status)).Int("steps", snap.Steps).Str("reason", snap.Error).Msg("job ended")
}

// endLocked moves j to its final state. Only done carries a nonce and a
// result; everything else carries the partial work, labelled as not a result.
func (r *Registry) endLocked(j *job, out outcome) {
	now := time.Now()
	exp := now.Add(r.opts.ResultTTL)
	s := &j.snap
	r.setUsageLocked(j, out.usage)
	settleCommands(s.Commands, s.Status == StatusWaitingApproval)
	s.Status = out.status
	s.EndedAt, s.ExpiresAt = &now, &exp
	s.Approval = nil
	if out.status == StatusDone {
		nonce, err := randomHex(16) // 128 bits
		if err != nil {
			out = outcome{status: StatusError, reason: "could not make a nonce: " + err.Error()}
			s.Status = StatusError
		} else {
			s.Nonce, s.Result = nonce, out.result
		}
	}
	if s.Status != StatusDone {
		s.Nonce, s.Result = "", ""
		s.Error = harness.Clip(out.reason, maxErrorText)
		s.Partial = &Partial{
			Label:        PartialLabel,
			Notes:        append([]string(nil), j.notes...),
			ToolCalls:    maps(j.tally),
			FilesTouched: append([]string(nil), j.touched...),
		}
	}
	s.Trace = appendTrace(s.Trace, &s.TraceDropped, TraceEntry{Time: now, Kind: "state", Detail: string(s.Status)})
	if j.traceTimer != nil {
		j.traceTimer.Stop()
		j.traceTimer = nil
	}
}

// settleLocked tells waiters j is final; called once its final snapshot is
// on disk, so whoever sees the end state can also read it there.
func (r *Registry) settleLocked(j *job) {
	select {
	case <-j.done:
	default:
		close(j.done)
	}
	r.notifyLocked(j)
}

// addFile appends path unless it is listed already or the list is full.
func addFile(list []string, path string) []string {
	if slices.Contains(list, path) || len(list) >= MaxFiles {
		return list
	}
	return append(list, path)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// partialFromSnapshot rebuilds the partial of a job from its trace alone (a
// job found running on disk after a restart).
func partialFromSnapshot(s *Snapshot) *Partial {
	p := &Partial{Label: PartialLabel, ToolCalls: map[string]int{}}
	for _, e := range s.Trace {
		switch e.Kind {
		case "tool_use":
			p.ToolCalls[e.Tool]++
		case "text":
			p.Notes = append(p.Notes, e.Detail)
		}
	}
	if len(p.Notes) > maxNotes {
		p.Notes = p.Notes[len(p.Notes)-maxNotes:]
	}
	p.FilesTouched = append(p.FilesTouched, s.FilesWritten...)
	return p
}

// startQueuedLocked starts queued jobs while slots are free and returns them;
// the caller writes each one's snapshot and then notifies its waiters.
func (r *Registry) startQueuedLocked() []*job {
	var started []*job
	for !r.closed && r.running < r.opts.MaxConcurrent && len(r.queue) > 0 {
		j := r.queue[0]
		r.queue = r.queue[1:]
		r.launchLocked(j)
		started = append(started, j)
	}
	for _, q := range r.queue {
		r.notifyLocked(q) // positions moved
	}
	return started
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

// captureLocked copies j's snapshot for writing, with its sequence number.
func (r *Registry) captureLocked(j *job) (Snapshot, uint64) {
	j.seq++
	return r.snapshotLocked(j), j.seq
}

// snapshotLocked is j's snapshot as callers see it (queue position filled in).
func (r *Registry) snapshotLocked(j *job) Snapshot {
	s := j.snap.clone()
	s.QueuePosition = 0
	if s.Status == StatusQueued {
		for i, q := range r.queue {
			if q == j {
				s.QueuePosition = i + 1
			}
		}
	}
	return s
}

func (r *Registry) persist(j *job) {
	r.mu.Lock()
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	if err := r.write(j, snap, seq); err != nil {
		r.log.Error().Err(err).Str("job", j.id).Msg("snapshot write failed")
	}
}

// write stores snap unless a newer one of the same job is already on disk.
func (r *Registry) write(j *job, snap Snapshot, seq uint64) error {
	j.persistMu.Lock()
	defer j.persistMu.Unlock()
	if seq <= j.written {
		return nil
	}
	r.mu.Lock()
	removed := j.removed
	r.mu.Unlock()
	if removed {
		return nil
	}
	snap.QueuePosition = 0 // a live value, not state
	if err := statedir.WriteJSON(r.opts.Dir.JobFile(j.id), snap); err != nil {
		return err
	}
	j.written = seq
	return nil
}

// Get returns a job's snapshot.
func (r *Registry) Get(id string) (Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return Snapshot{}, unknown(id)
	}
	return r.snapshotLocked(j), nil
}

func unknown(id string) error {
	return fmt.Errorf("%w %q: it never existed here or its results expired; start a new job with deepseek_agent_start", ErrUnknownJob, id)
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
			r.mu.Unlock()
			return Snapshot{}, unknown(id)
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

// Cancel ends a job as cancelled and returns its snapshot once it is final
// (or after ctx ends). A finished job is returned unchanged.
func (r *Registry) Cancel(ctx context.Context, id string) (Snapshot, error) {
	r.mu.Lock()
	j, ok := r.jobs[id]
	if !ok {
		r.mu.Unlock()
		return Snapshot{}, unknown(id)
	}
	var snap Snapshot
	var seq uint64
	switch {
	case j.snap.Status.Final():
		s := r.snapshotLocked(j)
		r.mu.Unlock()
		return s, nil
	case j.snap.Status == StatusQueued:
		r.queue = slices.DeleteFunc(r.queue, func(q *job) bool { return q == j })
		r.endLocked(j, outcome{status: StatusCancelled, reason: "cancelled by the caller before it started"})
		for _, q := range r.queue {
			r.notifyLocked(q)
		}
		snap, seq = r.captureLocked(j)
		r.mu.Unlock()
		_ = r.write(j, snap, seq)
		r.mu.Lock()
		r.settleLocked(j)
		r.mu.Unlock()
		return r.Get(id)
	default:
		r.stopLocked(j, StatusCancelled, "cancelled by the caller")
		r.mu.Unlock()
	}
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	return r.Get(id)
}

// Abort ends a running job as error with reason (the model proxy calls it on
// a spent budget or a rejected key). The partial work is attached; no nonce.
func (r *Registry) Abort(id, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.jobs[id]; ok {
		r.stopLocked(j, StatusError, reason)
	}
}

// SetWaiting flips a running job to waiting_approval with a (or back to
// running when a is nil).
func (r *Registry) SetWaiting(id string, a *ApprovalInfo) {
	r.mu.Lock()
	j, ok := r.jobs[id]
	if !ok || j.snap.Status.Final() || j.snap.Status == StatusQueued || j.stopStatus != "" {
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
	snap, seq := r.captureLocked(j)
	r.mu.Unlock()
	if err := r.write(j, snap, seq); err != nil { // on disk before any poller is told
		r.log.Error().Err(err).Str("job", id).Msg("snapshot write failed")
	}
	r.mu.Lock()
	r.notifyLocked(j)
	r.mu.Unlock()
}

// Close stops accepting jobs, stops every harness, marks those jobs (and the
// queued ones) interrupted, and waits for their runners until ctx ends.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var queued []*job
	for _, j := range r.queue {
		r.endLocked(j, outcome{status: StatusInterrupted, reason: "the bridge shut down before the job started"})
		queued = append(queued, j)
	}
	r.queue = nil
	for _, j := range r.jobs {
		if !j.snap.Status.Final() {
			r.stopLocked(j, StatusInterrupted, "the bridge shut down while the job was running")
		}
	}
	r.mu.Unlock()
	for _, j := range queued {
		r.persist(j)
		r.mu.Lock()
		r.settleLocked(j)
		r.mu.Unlock()
	}
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("jobs: shutdown: %w", ctx.Err())
	}
}

// sweep removes finished jobs whose TTL has passed, from memory and disk.
func (r *Registry) sweep() {
	defer r.wg.Done()
	every := min(r.opts.ResultTTL/4, time.Minute)
	every = max(every, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			r.sweepOnce(now)
		}
	}
}

func (r *Registry) sweepOnce(now time.Time) {
	r.mu.Lock()
	var gone []string
	for id, j := range r.jobs {
		if j.snap.Status.Final() && j.snap.ExpiresAt != nil && !now.Before(*j.snap.ExpiresAt) {
			j.removed = true
			delete(r.jobs, id)
			gone = append(gone, id)
		}
	}
	r.mu.Unlock()
	for _, id := range gone {
		r.removeFiles(id)
		r.log.Debug().Str("job", id).Msg("job expired")
	}
}

// removeOrphanHarnessDirs deletes per-job harness dirs no snapshot refers to
// (their job expired while no daemon was running).
func (r *Registry) removeOrphanHarnessDirs() {
	entries, err := os.ReadDir(r.opts.Dir.HarnessRoot())
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		id := e.Name()
		if _, ok := r.jobs[id]; ok || !ValidID(id) {
			continue
		}
		if _, err := os.Lstat(r.opts.Dir.JobFile(id)); err == nil {
			continue // a snapshot this build could not read: not an orphan
		}
		_ = os.RemoveAll(r.opts.Dir.HarnessDir(id))
	}
}

func (r *Registry) removeFiles(id string) {
	if err := os.Remove(r.opts.Dir.JobFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired snapshot")
	}
	if err := os.RemoveAll(r.opts.Dir.HarnessDir(id)); err != nil {
		r.log.Warn().Err(err).Str("job", id).Msg("remove expired harness dir")
	}
}

func appendTrace(tr []TraceEntry, dropped *int, e TraceEntry) []TraceEntry {
	tr = append(tr, e)
	if over := len(tr) - MaxTrace; over > 0 {
		*dropped += over
		tr = append(tr[:0:0], tr[over:]...)
	}
	return tr
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

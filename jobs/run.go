package jobs

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// outcome is how a run ended, before it is written into the snapshot.
type outcome struct {
	status Status
	reason string
	result string
	usage  *Metered
}

// runJob runs j from its slot to its final state; owned by r.wg.
func (r *Registry) runJob(j *job) {
	defer r.wg.Done()
	opened := time.Now()
	baseURL, token, err := r.opts.Gateway.Open(j.id)
	j.spawnTimes.token = time.Since(opened)
	if err != nil {
		r.finish(j, outcome{status: StatusError, reason: "could not open the model endpoint: " + err.Error()})
		return
	}
	r.mu.Lock()
	off := j.snap.Thinking == harness.ThinkingOff
	r.mu.Unlock()
	if sw, ok := r.opts.Gateway.(ThinkingSwitch); ok && off {
		sw.DisableThinking(j.id)
	}
	out := r.execute(j, baseURL, token)
	r.audit(j)
	if u, err := r.opts.Gateway.Close(j.id); err == nil {
		out.usage = &u
	} else {
		r.log.Warn().Err(err).Str("job", j.id).Msg("model gateway close")
	}
	r.finish(j, out)
}

// audit runs the guard's end-of-job audit of j's workspace (its processes
// are gone by now) and keeps what it found for the final snapshot.
func (r *Registry) audit(j *job) {
	r.mu.Lock()
	ws := j.snap.Workspace
	r.mu.Unlock()
	res := r.opts.Guard.Audit(r.ctx, j.id, ws)
	r.mu.Lock()
	j.snap.Quarantined, j.snap.AuditNote = res.Quarantined, res.Note
	r.mu.Unlock()
}

// execute runs the harness to its end and says how the job ended.
func (r *Registry) execute(j *job, baseURL, token string) outcome {
	r.mu.Lock()
	spec := harness.Spec{
		JobID: j.id, Task: j.snap.Task, Workspace: j.snap.Workspace,
		ConfigDir: r.opts.Dir.HarnessDir(j.id), BaseURL: baseURL, Token: token, Model: cmp.Or(j.snap.Model, r.opts.Model),
		Thinking: j.snap.Thinking, Policy: j.snap.Policy,
	}
	if pol := j.snap.Policy; pol != nil {
		spec.Tools = pol.Offered(harness.DefaultTools)
		spec.AppendSystemPrompt = pol.AppendSystemPrompt
	}
	r.mu.Unlock()
	prepared := time.Now()
	err := r.opts.Guard.Prepare(r.ctx, &spec)
	j.spawnTimes.prepare = time.Since(prepared)
	if err != nil {
		return outcome{status: StatusError, reason: "could not prepare the harness: " + err.Error()}
	}
	j.ledger = &ledgerReader{path: filepath.Join(spec.ConfigDir, policy.LedgerFile)}
	waited := time.Now()
	<-j.recorded // no harness runs before its job is on disk: a restart must find it
	j.spawnTimes.recordWait = time.Since(waited)
	r.mu.Lock()
	j.offered = spec.Tools
	if j.offered == nil {
		j.offered = harness.DefaultTools
	}
	if j.stopStatus != "" { // cancelled or shut down before the harness started
		out := outcome{status: j.stopStatus, reason: j.stopReason}
		r.mu.Unlock()
		return out
	}
	r.mu.Unlock()
	spawned := time.Now()
	run, err := r.opts.Harness.Start(r.ctx, spec)
	j.spawnTimes.spawn = time.Since(spawned)
	if err != nil {
		return outcome{status: StatusError, reason: "could not start the agent harness: " + err.Error()}
	}
	r.logSpawn(j)
	r.mu.Lock()
	j.run = run
	j.snap.HarnessPID = run.PID()
	if j.stopStatus != "" { // cancelled or shut down while starting
		run.Stop()
	}
	r.commitLocked(j, tellNobody)
	r.mu.Unlock()

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
		return outcome{status: StatusError, reason: failureReason(res)}
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

// apply folds one harness event into j and tells its waiters; the snapshot
// reaches disk at most once per TraceInterval (scheduleTraceLocked).
func (r *Registry) apply(j *job, ev harness.Event) {
	var verdicts []policy.Verdict
	if ev.Kind == harness.KindToolResult {
		verdicts = j.ledger.next() // the child wrote its verdict before the tool ran
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range verdicts {
		j.verdicts[v.ToolUseID] = v
	}
	var stop string
	j.progress, stop = fold(j.progress, ev)
	if stop != "" {
		r.stopLocked(j, StatusError, stop)
	}
	j.seq++
	r.notifyLocked(j)
	r.scheduleTraceLocked(j)
}

// scheduleTraceLocked writes the snapshot now if the last write is older than
// the interval, else once the interval has passed.
func (r *Registry) scheduleTraceLocked(j *job) {
	if j.traceTimer != nil || j.removed {
		return
	}
	wait := max(r.opts.TraceInterval-time.Since(j.lastWrite), 0)
	j.traceTimer = time.AfterFunc(wait, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		j.traceTimer = nil
		if j.snap.Status.Final() || j.removed {
			return
		}
		j.lastWrite = time.Now()
		r.commitLocked(j, tellNobody) // its waiters were told by apply
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
	snap := r.commitLocked(j, tellSettled)
	r.slots.release(j)
	for _, q := range r.startQueuedLocked() {
		r.commitLocked(q, tellWaiters) // running on disk first, then its pollers are told
		go r.runJob(q)                 // owner: the registry (r.wg, joined by Close)
	}
	r.mu.Unlock()
	r.log.Info().Str("job", j.id).Str("status", string(snap.Status)).Int("steps", snap.Steps).Str("reason", snap.Error).Msg("job ended")
}

// endLocked moves j to its final state. Only done carries a nonce and a
// result; everything else carries the partial work, labelled as not a result.
func (r *Registry) endLocked(j *job, out outcome) {
	now := time.Now()
	exp := now.Add(r.opts.ResultTTL)
	s := &j.snap
	j.setUsage(out.usage)
	settleCommands(s.Commands, s.Status == StatusWaitingApproval)
	s.Status = out.status
	s.EndedAt, s.ExpiresAt = &now, &exp
	s.Approval = nil
	if out.status == StatusDone {
		nonce, err := ids.New() // as unguessable as a job id: 128 bits
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
		s.Partial = j.partial()
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

package jobs

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// outcome is how a run ended, before it is written into the snapshot: its
// stop (whose reason decides the status) and, when completed, the result.
type outcome struct {
	stop   Stop
	result string
	usage  *Metered
}

// failed is an outcome of reason with text.
func failed(reason StopReason, text string) outcome {
	return outcome{stop: Stop{Reason: reason, Text: text}}
}

// runJob runs j from its slot to its final state; owned by r.wg.
func (r *Registry) runJob(j *job) {
	defer r.wg.Done()
	opened := time.Now()
	baseURL, token, err := r.opts.Gateway.Open(j.id)
	j.spawnTimes.token = time.Since(opened)
	if err != nil {
		r.finish(j, failed(StopHarnessFailed, "could not open the model endpoint: "+err.Error()))
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
		out = out.explainedBy(u)
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
	rep, err := r.opts.Guard.Changes(r.ctx, j.id, ws)
	r.mu.Lock()
	j.snap.Quarantined, j.snap.AuditNote = res.Quarantined, res.Note
	j.setChanges(rep, err)
	r.mu.Unlock()
}

// execute runs the harness to its end and says how the job ended.
func (r *Registry) execute(j *job, baseURL, token string) outcome {
	r.mu.Lock()
	spec := harness.Spec{
		JobID: j.id, Task: cmp.Or(j.prompt, harnessTask(j.snap)), Workspace: j.snap.Workspace,
		ConfigDir: r.opts.Dir.HarnessDir(j.id), BaseURL: baseURL, Token: token, Model: cmp.Or(j.snap.Model, r.opts.Model),
		Thinking: j.snap.Thinking, Policy: j.snap.Policy,
	}
	if pol := j.snap.Policy; pol != nil {
		spec.Tools = pol.Offered(harness.DefaultTools)
		spec.AppendSystemPrompt = pol.AppendSystemPrompt
	}
	parent, resume := j.snap.Parent, j.snap.ResumeSession
	spec.Parent = parent
	r.mu.Unlock()
	if resume != "" {
		if err := seedSession(r.opts.Dir.HarnessDir(parent), spec.ConfigDir); err != nil {
			return failed(StopHarnessFailed, "could not resume the session of job "+parent+": "+err.Error())
		}
		spec.Resume = resume
	}
	prepared := time.Now()
	err := r.opts.Guard.Prepare(r.ctx, &spec)
	j.spawnTimes.prepare = time.Since(prepared)
	if err != nil {
		return failed(StopHarnessFailed, "could not prepare the harness: "+err.Error())
	}
	j.ledger = &ledgerReader{path: r.opts.Dir.LedgerFile(j.id)}
	waited := time.Now()
	<-j.recorded // no harness runs before its job is on disk: a restart must find it
	j.spawnTimes.recordWait = time.Since(waited)
	r.mu.Lock()
	j.offered = spec.Tools
	if j.offered == nil {
		j.offered = harness.DefaultTools
	}
	if j.stop != nil { // cancelled or shut down before the harness started
		out := outcome{stop: *j.stop}
		r.mu.Unlock()
		spec.CloseWrapFiles()
		return out
	}
	r.mu.Unlock()
	spawned := time.Now()
	run, err := r.opts.Harness.Start(r.ctx, spec)
	j.spawnTimes.spawn = time.Since(spawned)
	if err != nil {
		return failed(StopHarnessFailed, "could not start the agent harness: "+err.Error())
	}
	r.logSpawn(j, run.PID())
	r.mu.Lock()
	j.run = run
	j.snap.HarnessPID = run.PID()
	if j.stop != nil { // cancelled or shut down while starting
		run.Stop()
	}
	r.commitLocked(j, tellNobody)
	r.mu.Unlock()

	timer := time.AfterFunc(j.timeout, func() {
		r.stop(j, Stop{Reason: StopTimeCeiling, Text: fmt.Sprintf("the job hit its wall-clock ceiling of %s and was stopped", j.timeout)})
	})
	defer timer.Stop()
	for ev := range run.Events() {
		r.apply(j, ev)
	}
	exit := run.Wait()
	timer.Stop()

	r.mu.Lock()
	defer r.mu.Unlock()
	if exit.Limit != nil { // what killed it, whatever else was asked meanwhile
		return outcome{stop: limitStop(exit.Limit)}
	}
	if j.stop != nil {
		return outcome{stop: *j.stop}
	}
	switch res := j.result; {
	case res.Succeeded():
		return outcome{stop: Stop{Reason: StopCompleted}, result: res.Text}
	case res != nil:
		return j.unfinished(StopNoResult, failureReason(res))
	default:
		why := fmt.Sprintf("the agent harness exited (code %d%s) without a result", exit.Code, sigSuffix(exit.Signal))
		if tail := lastLines(exit.Stderr, 5); tail != "" {
			why += "; its last stderr lines: " + tail
		}
		if exit.Err != nil {
			why += ": " + exit.Err.Error()
		}
		return j.unfinished(StopHarnessFailed, why)
	}
}

// unfinished is the outcome of a harness that ended on its own without a
// successful result: approval_timeout when the last request it made of a
// human got no answer in time, else reason.
func (j *job) unfinished(reason StopReason, why string) outcome {
	if j.timedOut {
		return failed(StopApprovalTimeout, why+"; its last approval request got no answer in time (BRIDGE_APPROVAL_TIMEOUT_MS)")
	}
	return failed(reason, why)
}

// explainedBy turns a harness that ended without a result into a
// model_error when the model gateway's last answer to the job was an
// upstream error: that is why it stopped.
func (o outcome) explainedBy(m Metered) outcome {
	switch {
	case m.UpstreamError == "":
	case o.stop.Reason == StopNoResult, o.stop.Reason == StopHarnessFailed:
		o.stop.Reason, o.stop.Class = StopModelError, m.UpstreamError
		o.stop.Text += " (DeepSeek's last answer to it was an error: " + m.UpstreamError + ")"
	}
	return o
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
		j.progress.addVerdict(v)
	}
	var stop string
	j.progress, stop = fold(j.progress, ev)
	if stop != "" {
		r.stopLocked(j, Stop{Reason: StopStepCeiling, Text: stop})
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

// stop asks a running job to end for st; the first request wins.
func (r *Registry) stop(j *job, st Stop) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked(j, st)
}

func (r *Registry) stopLocked(j *job, st Stop) {
	if j.stop != nil || j.snap.Status.Final() {
		return
	}
	j.stop = &st
	j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: time.Now(), Kind: "state", Detail: "stopping (" + string(st.Reason) + "): " + st.Text})
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
	took := snap.Elapsed(time.Now()).Round(10 * time.Millisecond)
	steps := "steps"
	if snap.Steps == 1 {
		steps = "step"
	}
	msg := fmt.Sprintf("job ended: %s (%s) after %d %s in %s", snap.Status, snap.StopReason, snap.Steps, steps, took)
	if snap.Error != "" {
		msg += ": " + snap.Error
	}
	r.log.Info().Str("job", j.id).Str("status", string(snap.Status)).Str("stop_reason", string(snap.StopReason)).Int("steps", snap.Steps).
		Dur("elapsed", took).Str("reason", snap.Error).Msg(msg)
}

// endLocked moves j to its final state. Only done carries a nonce and a
// result; everything else carries the partial work, labelled as not a result.
func (r *Registry) endLocked(j *job, out outcome) {
	now := time.Now()
	exp := now.Add(r.opts.ResultTTL)
	s := &j.snap
	j.setUsage(out.usage)
	settleCommands(s.Commands, s.Status == StatusWaitingApproval)
	if out.stop.Reason == StopCompleted {
		nonce, err := ids.New() // as unguessable as a job id: 128 bits
		if err != nil {
			out = failed(StopHarnessFailed, "could not make a nonce: "+err.Error())
		} else {
			s.Nonce, s.Result = nonce, out.result
		}
	}
	s.Status = StatusOf(out.stop.Reason)
	if s.Status == StatusDone && s.ChangesIncomplete {
		s.Status = StatusDoneUnverified
	}
	s.StopReason, s.ModelError = out.stop.Reason, out.stop.Class
	s.EndedAt, s.ExpiresAt = &now, &exp
	s.Approval = nil
	s.UnresolvedFailures = UnresolvedFailures(s.Commands)
	if !s.Status.Done() {
		s.Nonce, s.Result = "", ""
		s.Error = harness.Clip(out.stop.Text, maxErrorText)
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

// Messages into a running job: a follow-up after its current turn, or a
// steer that interrupts the turn first.

package jobs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// The modes of a message.
const (
	MessageSteer    = "steer"     // interrupt the current turn, then this
	MessageFollowUp = "follow_up" // after the current turn
)

// ErrNotRunning: the job takes no messages now (it has not started, is
// stopping or has ended); the message says what to do instead.
var ErrNotRunning = errors.New("the job is not running")

// VerdictDelivered is the ledger verdict of a message sent into a job.
const VerdictDelivered = "delivered"

// Message sends text into the running job id: a follow-up runs after the
// current turn, a steer interrupts it first. The message is in the job's
// trace and ledger.
func (r *Registry) Message(id, text, mode string) (Snapshot, error) {
	switch {
	case strings.TrimSpace(text) == "":
		return Snapshot{}, fmt.Errorf("%w: message is empty: say what the agent should do", ErrBadInput)
	case len(text) > maxTaskBytes:
		return Snapshot{}, fmt.Errorf("%w: message is %d bytes, at most %d: put long material in a file in the workspace and refer to it", ErrBadInput, len(text), maxTaskBytes)
	case mode != MessageSteer && mode != MessageFollowUp:
		return Snapshot{}, fmt.Errorf("%w: mode must be %s or %s, not %q", ErrBadInput, MessageSteer, MessageFollowUp, mode)
	}
	m, err := r.messengerOf(id)
	if err != nil {
		return Snapshot{}, err
	}
	// The write may wait on a full pipe: not under the registry's lock.
	reason := "sent; it runs after the current turn"
	if mode == MessageSteer {
		reason = "the current turn was interrupted, then this was sent"
		err = m.Interrupt()
	}
	if err == nil {
		err = m.Send(text)
	}
	if errors.Is(err, harness.ErrInputClosed) {
		return Snapshot{}, fmt.Errorf("%w: job %s has ended its last turn and is finishing: wait for it with deepseek_agent_poll, then continue it with deepseek_agent_continue", ErrNotRunning, id)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("job %s: the message could not be sent: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return Snapshot{}, r.unknownLocked(id)
	}
	now := time.Now()
	j.snap.Trace = appendTrace(j.snap.Trace, &j.snap.TraceDropped, TraceEntry{Time: now, Kind: "message", Detail: mode + ": " + harness.Clip(text, 300)})
	j.addLedger(LedgerEntry{Time: now, Tool: "message", Summary: mode + ": " + harness.Clip(text, 300), Verdict: VerdictDelivered, Reason: reason})
	j.seq++
	r.notifyLocked(j)
	r.scheduleTraceLocked(j)
	return r.snapshotLocked(j), nil
}

// messengerOf is the running harness of job id, or why it takes no message.
func (r *Registry) messengerOf(id string) (harness.Messenger, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return nil, r.unknownLocked(id)
	}
	m, ok := j.run.(harness.Messenger)
	switch {
	case j.snap.Status.Final():
		return nil, fmt.Errorf("%w: job %s has ended (%s), so a message cannot reach it: continue it with deepseek_agent_continue (job_id %s, your message as the task)", ErrNotRunning, id, j.snap.Status, id)
	case j.stop != nil:
		return nil, fmt.Errorf("%w: job %s is stopping (%s): wait for it with deepseek_agent_poll, then continue it with deepseek_agent_continue", ErrNotRunning, id, j.stop.Reason)
	case j.run == nil:
		return nil, fmt.Errorf("%w: job %s has not started yet (%s): wait for it with deepseek_agent_poll and send the message once it runs, or cancel it and start a new one", ErrNotRunning, id, j.snap.Status)
	case !ok:
		return nil, fmt.Errorf("%w: job %s's harness takes no messages", ErrNotRunning, id)
	}
	return m, nil
}

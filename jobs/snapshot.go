package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Status is where a job is in its life.
type Status string

// queued → running ⇄ waiting_approval → done | error | cancelled | interrupted.
const (
	StatusQueued          Status = "queued"
	StatusRunning         Status = "running"
	StatusWaitingApproval Status = "waiting_approval"
	StatusDone            Status = "done"
	// StatusDoneUnverified is done, but the record of what the job changed
	// could not see everything (a job without an overlay, in a workspace
	// past the walk's limit or its time): the changes listed may not be all.
	StatusDoneUnverified Status = "done_unverified"
	StatusError          Status = "error"
	StatusCancelled      Status = "cancelled"
	StatusInterrupted    Status = "interrupted"
)

// Final reports whether s is an end state.
func (s Status) Final() bool {
	switch s {
	case StatusDone, StatusDoneUnverified, StatusError, StatusCancelled, StatusInterrupted:
		return true
	}
	return false
}

// Done reports whether the job ended with its harness's own successful
// result (done, or done_unverified).
func (s Status) Done() bool { return s == StatusDone || s == StatusDoneUnverified }

// Usage is what a job's model calls cost in tokens. InputTokens are the
// cache-miss input tokens, CacheReadTokens the cache hits; ThinkingTokens are
// part of OutputTokens.
type Usage struct {
	InputTokens     int64 `json:"input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	CacheReadTokens int64 `json:"cache_read_tokens"`
	ThinkingTokens  int64 `json:"thinking_tokens"`
}

// IsZero reports whether u counts nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// ApprovalInfo is the request a job is waiting on.
type ApprovalInfo struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// Command is one Bash command of the job.
type Command struct {
	Command string `json:"command"`
	// ExitCode is the exit status when the harness reported it.
	ExitCode *int `json:"exit_code,omitempty"`
	// Denied: the permission layer refused it; it never ran.
	Denied bool `json:"denied,omitempty"`
	// Note says what is known when there is no exit status: it never ran
	// (the job ended while it waited for approval), the job ended before its
	// result, or the harness refused it with an error.
	Note string `json:"note,omitempty" jsonschema:"what is known when there is no exit status: waiting for approval (not run yet), not run, no result, or failed without one"`
	// DurationMS is from when it was allowed to run (its call, or a
	// person's approval of it) to its result; absent while it runs and for
	// a denied command.
	DurationMS *int64 `json:"duration_ms,omitempty" jsonschema:"milliseconds from when it was allowed to run (its call, or a person's approval) to its result"`
	// OutputTail is the end of its output (harness.OutputTail: the last
	// lines, at most 1 KiB, control characters escaped).
	OutputTail string `json:"output_tail,omitempty" jsonschema:"the last lines of its output (at most 1 KiB, control characters escaped)"`
	// Runs is how many times the job ran this same command (every listing
	// of it carries the count).
	Runs int `json:"runs,omitempty" jsonschema:"how many times the job ran this same command"`
}

// failed: the command ran and failed (an exit status but 0, or an error
// without one).
func (c Command) failed() bool {
	return !c.Denied && ((c.ExitCode != nil && *c.ExitCode != 0) || strings.HasPrefix(c.Note, notePrefixFailed))
}

// succeeded: the command ran and exited 0.
func (c Command) succeeded() bool { return !c.Denied && c.ExitCode != nil && *c.ExitCode == 0 }

// countRuns sets Runs on every listing of cmd; a listing that waits for
// approval, or never got it, has not run, so it is not counted.
func countRuns(cmds []Command, cmd string) {
	n := 0
	for _, c := range cmds {
		if c.Command == cmd && c.Note != NoteWaiting && c.Note != NoteNotRun {
			n++
		}
	}
	for i := range cmds {
		if cmds[i].Command == cmd {
			cmds[i].Runs = n
		}
	}
}

// UnresolvedFailures are the commands that failed and were not followed by
// a success of the same command, in the order of their first failure.
func UnresolvedFailures(cmds []Command) []string {
	var order []string
	failing := map[string]bool{} // command → its latest run with a result failed
	for _, c := range cmds {
		switch {
		case c.failed():
			if !slices.Contains(order, c.Command) {
				order = append(order, c.Command)
			}
			failing[c.Command] = true
		case c.succeeded():
			failing[c.Command] = false
		}
	}
	var out []string
	for _, c := range order {
		if failing[c] {
			out = append(out, c)
		}
	}
	return out
}

// The notes of commands without an exit status.
const (
	NoteWaiting      = "waiting for approval: not run yet"
	NoteNotRun       = "not run: the job ended while it waited for approval"
	NoteNoResult     = "no result: the job ended before the command reported one (it may have run in part)"
	notePrefixFailed = "failed without an exit status: "
	noteBackground   = "no exit status: moved to the background, still running when reported (task "
)

// Status is how the command ended, in words: "denied", "exit N", its Note,
// or "running" (no result yet, the job still going).
func (c Command) Status() string {
	switch {
	case c.Denied:
		return "denied"
	case c.ExitCode != nil:
		return fmt.Sprintf("exit %d", *c.ExitCode)
	case c.Note != "":
		return c.Note
	default:
		return "running"
	}
}

// open: a command listed without a result yet (running, or waiting for approval).
func (c Command) open() bool {
	return !c.Denied && c.ExitCode == nil && (c.Note == "" || c.Note == NoteWaiting)
}

// markWaiting lists the command a job waits on approval for as waiting, not
// run (waiting), or as running again once the wait is over. While a job
// waits Claude Code runs nothing else, so the last open command is the one
// waiting.
func markWaiting(cmds []Command, waiting bool) {
	for i := len(cmds) - 1; i >= 0; i-- {
		c := &cmds[i]
		switch {
		case waiting && c.open():
			c.Note = NoteWaiting
		case !waiting && c.Note == NoteWaiting:
			c.Note = ""
		default:
			continue
		}
		countRuns(cmds, c.Command)
		return
	}
}

// settleCommands gives every command that has no result a note, once its
// job has ended: the one a job waited on approval for never ran.
func settleCommands(cmds []Command, waitingApproval bool) {
	var open []int
	for i, c := range cmds {
		if c.open() {
			open = append(open, i)
		}
	}
	for _, i := range open {
		cmds[i].Note = NoteNoResult
	}
	// While a job waits for approval Claude Code runs nothing else, so the
	// last open command is the one waiting.
	if waitingApproval && len(open) > 0 {
		c := &cmds[open[len(open)-1]]
		c.Note = NoteNotRun
		countRuns(cmds, c.Command)
	}
}

// Partial is what a job that did not finish had done. It is never a result.
type Partial struct {
	// Label says, in words, that this is not a result.
	Label        string         `json:"label"`
	Notes        []string       `json:"notes,omitempty"`         // the model's last notes
	ToolCalls    map[string]int `json:"tool_calls,omitempty"`    // tally per tool
	FilesTouched []string       `json:"files_touched,omitempty"` // files read, or written by a Write/Edit that succeeded
}

// PartialLabel heads every Partial.
const PartialLabel = "NOT A RESULT: the job stopped before finishing; this is only what it had done so far"

// TraceEntry is one line of a job's trace.
type TraceEntry struct {
	Time     time.Time `json:"t"`
	Kind     string    `json:"kind"` // tool_use | tool_result | text | state
	Tool     string    `json:"tool,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	IsError  bool      `json:"is_error,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Denied   bool      `json:"denied,omitempty"`
}

// Denial is a tool call the harness's permission layer refused.
type Denial struct {
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
}

// SnapshotVersion is the format version of jobs/<id>.json (see docs/STATE.md).
const SnapshotVersion = 1

// Snapshot is everything known about one job; it is also the format of
// <state>/jobs/<id>.json (docs/STATE.md).
type Snapshot struct {
	Version   int    `json:"version"`
	ID        string `json:"id"`
	Status    Status `json:"status"`
	Task      string `json:"task"`
	Workspace string `json:"workspace"`
	// Context is the caller's context for the task, and Acceptance its
	// checks with what the job's tool calls say of each.
	Context    string        `json:"context,omitempty"`
	Acceptance []CheckStatus `json:"acceptance,omitempty"`
	// Review is set on a review job (deepseek_review) and its continuations.
	Review *ReviewState `json:"review,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// ExpiresAt is when a finished job is swept from memory and disk.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`

	MaxSteps  int   `json:"max_steps"`
	TimeoutMS int64 `json:"timeout_ms"`

	Steps    int    `json:"steps"`
	LastTool string `json:"last_tool,omitempty"`

	// Nonce and Result are set only on done.
	Nonce  string `json:"nonce,omitempty"`
	Result string `json:"result,omitempty"`
	// Error says why a job ended error, cancelled or interrupted.
	Error   string   `json:"error,omitempty"`
	Partial *Partial `json:"partial,omitempty"`
	// StopReason is why the job ended (set on every ended job); a
	// model_error's upstream class is in ModelError.
	StopReason StopReason `json:"stop_reason,omitempty"`
	ModelError string     `json:"model_error,omitempty"`
	// UnresolvedFailures are the commands that failed and never succeeded
	// afterwards (UnresolvedFailures), set once the job has ended.
	UnresolvedFailures []string `json:"unresolved_failures,omitempty"`
	// Changes are the files the job created, modified and deleted, seen on
	// disk at its end (package changes); ChangesUnlisted counts those past
	// the bound, ChangesNote says what the comparison could not see.
	Changes         []changes.Change `json:"changes,omitempty"`
	ChangesUnlisted int              `json:"changes_unlisted,omitempty"`
	ChangesNote     string           `json:"changes_note,omitempty"`
	// ChangesRecord is how the changes were recorded: RecordExact (read
	// from the job's overlay: every byte it wrote) or RecordWalk (a walk
	// of the workspace, which can miss changes). ChangesRecordFile holds
	// every change of an exact record, with its status.
	ChangesRecord     string `json:"changes_record,omitempty"`
	ChangesRecordFile string `json:"changes_record_file,omitempty"`
	// ChangesHeld, ChangesConflicts and ChangesPending count an exact
	// record's changes held back, in conflict with the owner's edits, and
	// waiting for review.
	ChangesHeld int `json:"changes_held,omitempty"`
	// ChangesIncomplete: the record could not see everything (a walk past
	// its limit or its time); a completed job then ends done_unverified.
	ChangesIncomplete bool `json:"changes_incomplete,omitempty"`
	ChangesConflicts  int  `json:"changes_conflicts,omitempty"`
	ChangesPending    int  `json:"changes_pending,omitempty"`
	// Diff is the unified diff of the text files changed, at most
	// MaxDiffBytes (DiffTruncated then; DiffBytes is the whole diff's
	// size, kept in the state dir's changes/<id>/diff.patch).
	Diff          string `json:"diff,omitempty"`
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
	DiffBytes     int    `json:"diff_bytes,omitempty"`

	Usage   Usage   `json:"usage"`
	CostUSD float64 `json:"cost_usd"`

	FilesWritten      []string  `json:"files_written"`
	Commands          []Command `json:"commands"`
	PermissionDenials []Denial  `json:"permission_denials,omitempty"`
	// Quarantined are the git dirs, hooks and runs-later files the job
	// created or changed, moved aside at its end (see sandbox.Quarantine).
	Quarantined []sandbox.Quarantined `json:"quarantined,omitempty"`
	// AuditNote says what the end-of-job audit could not do.
	AuditNote string        `json:"audit_note,omitempty"`
	Approval  *ApprovalInfo `json:"approval,omitempty"`
	// QueuePosition is 1 for the next queued job; 0 when not queued.
	QueuePosition int `json:"queue_position,omitempty"`

	SessionID string `json:"session_id,omitempty"`
	// Parent is the job a continued job resumes (deepseek_agent_continue),
	// and ResumeSession the parent's Claude Code session it resumes.
	Parent        string `json:"parent,omitempty"`
	ResumeSession string `json:"resume_session,omitempty"`
	NumTurns      int    `json:"num_turns,omitempty"`
	HarnessPID    int    `json:"harness_pid,omitempty"`

	Trace        []TraceEntry `json:"trace,omitempty"`
	TraceDropped int          `json:"trace_dropped,omitempty"` // oldest entries dropped to keep the bound

	// What the job ran as and under, and what became of each tool call.
	Model       string           `json:"model,omitempty"`
	Thinking    string           `json:"thinking,omitempty"`
	Policy      *policy.Enforced `json:"policy,omitempty"`
	Ledger      []LedgerEntry    `json:"ledger,omitempty"`       // the last MaxLedger entries
	LedgerTotal int              `json:"ledger_total,omitempty"` // every entry, dropped ones included
}

// CanContinue reports whether deepseek_agent_continue can pick the job up:
// it ended and its harness began a session (whose files the state dir keeps
// until the job expires).
func (s *Snapshot) CanContinue() bool { return s.Status.Final() && s.SessionID != "" }

// Elapsed is the time since the job was created, up to its end.
func (s *Snapshot) Elapsed(now time.Time) time.Duration {
	end := now
	if s.EndedAt != nil {
		end = *s.EndedAt
	}
	if end.Before(s.CreatedAt) {
		return 0
	}
	return end.Sub(s.CreatedAt)
}

// clone deep-copies s so it can leave the registry's lock.
func (s *Snapshot) clone() Snapshot {
	c := *s
	c.FilesWritten = append([]string{}, s.FilesWritten...)
	c.Commands = append([]Command{}, s.Commands...)
	c.PermissionDenials = append([]Denial(nil), s.PermissionDenials...)
	c.Quarantined = append([]sandbox.Quarantined(nil), s.Quarantined...)
	c.UnresolvedFailures = append([]string(nil), s.UnresolvedFailures...)
	c.Changes = append([]changes.Change(nil), s.Changes...)
	c.Trace = append([]TraceEntry(nil), s.Trace...)
	c.Ledger = append([]LedgerEntry(nil), s.Ledger...)
	if s.Partial != nil {
		p := *s.Partial
		p.Notes = append([]string(nil), s.Partial.Notes...)
		p.FilesTouched = append([]string(nil), s.Partial.FilesTouched...)
		p.ToolCalls = make(map[string]int, len(s.Partial.ToolCalls))
		for k, v := range s.Partial.ToolCalls {
			p.ToolCalls[k] = v
		}
		c.Partial = &p
	}
	if s.Approval != nil {
		a := *s.Approval
		c.Approval = &a
	}
	return c
}

// ErrUnknownJob: no job has this id (or it has expired).
var ErrUnknownJob = errors.New("unknown job id")

// Load reads one job's snapshot from the state dir, without a daemon.
func Load(dir statedir.Dir, id string) (Snapshot, error) {
	if !ids.Valid(id) {
		return Snapshot{}, fmt.Errorf("%w %q: job ids are 32 hex characters (see `bridgectl jobs`)", ErrUnknownJob, id)
	}
	path := dir.JobFile(id)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Snapshot{}, fmt.Errorf("%w %s: it never existed or its results have expired", ErrUnknownJob, id)
	}
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		var v struct{ Version int }
		if json.Unmarshal(b, &v) == nil && v.Version != SnapshotVersion {
			return Snapshot{}, &ForeignVersionError{Path: path, ID: id, Version: v.Version}
		}
		return Snapshot{}, damaged(path, id, b, err)
	}
	if s.Version != SnapshotVersion {
		return Snapshot{}, &ForeignVersionError{Path: path, ID: id, Version: s.Version}
	}
	if !s.Status.known() {
		return Snapshot{}, &UnknownStatusError{Path: path, ID: id, Status: s.Status}
	}
	return s, nil
}

// ForeignVersionError: a snapshot written in a format version this build
// does not read.
type ForeignVersionError struct {
	Path    string
	ID      string
	Version int
}

func (e *ForeignVersionError) Error() string {
	return fmt.Sprintf("%s: snapshot format version %d, this build reads %d: use the bridgectl of the same release as the daemon", e.Path, e.Version, SnapshotVersion)
}

// LoadAll reads every snapshot in the state dir, oldest first. Files that are
// not snapshots (temp files, foreign names, the set-aside dir) are skipped; a
// snapshot that cannot be read is reported in errs (a *DamagedError,
// *UnknownStatusError or *ForeignVersionError says what is still known) and
// skipped.
func LoadAll(dir statedir.Dir) (snaps []Snapshot, errs []error) {
	entries, err := os.ReadDir(dir.Jobs())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("read jobs dir: %w", err)}
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ids.Valid(id) || !e.Type().IsRegular() {
			continue
		}
		s, err := Load(dir, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.ID != id {
			errs = append(errs, fmt.Errorf("%s: snapshot names job %q", filepath.Join(dir.Jobs(), e.Name()), s.ID))
			continue
		}
		snaps = append(snaps, s)
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].CreatedAt.Before(snaps[j].CreatedAt) })
	return snaps, errs
}

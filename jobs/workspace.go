package jobs

import (
	"context"
	"path/filepath"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// ErrWorkspace: the workspace was refused; the message says why and what to do.
var ErrWorkspace = sandbox.ErrWorkspace

// Guard is the approval and sandbox layer the registry runs every job
// through (package guard in the daemon).
type Guard interface {
	// Admit checks a caller's workspace and returns the path the job runs
	// in; a refusal wraps ErrWorkspace and tells the caller what to do.
	Admit(dir string) (string, error)
	// Prepare adds the job's harness files and flags to spec before it
	// starts.
	Prepare(ctx context.Context, spec *harness.Spec) error
	// Audit runs once the job's processes are gone, in every end state:
	// it compares the workspace with Prepare's record of what runs later
	// and moves aside what the job created or changed there.
	Audit(ctx context.Context, jobID, workspace string) sandbox.AuditResult
	// Changes runs after Audit: it compares the workspace with the record
	// Prepare took of it and lists what the job created, modified and
	// deleted, with the unified diff (package changes). An error means
	// there is no usable record.
	Changes(ctx context.Context, jobID, workspace string) (changes.Report, error)
}

// How a job's changes were recorded (Snapshot.ChangesRecord).
const (
	RecordExact = "exact" // from the job's overlay
	RecordWalk  = "walk"  // a walk of the workspace, which can miss changes
)

// MaxDiffBytes bounds the diff a snapshot (and a poll) carries; the whole
// diff stays in the state dir (`bridgectl jobs ID --diff`).
const MaxDiffBytes = 64 << 10

// setChanges puts what the job changed on disk into its snapshot, and who
// made each change where that can be told: a Write/Edit the harness
// reported ("tool"), else a command ("command") when the job ran any.
func (p *progress) setChanges(rep changes.Report, err error) {
	s := &p.snap
	if err != nil {
		s.Changes, s.Diff, s.DiffBytes, s.DiffTruncated = nil, "", 0, false
		s.ChangesNote = "the job's changes are not known: " + err.Error()
		return
	}
	ran := len(s.Commands) > 0
	for i := range rep.Changes {
		switch c := &rep.Changes[i]; {
		case wroteByTool(s.FilesWritten, s.Workspace, c.Path):
			c.By = "tool"
		case ran:
			c.By = "command"
		}
	}
	s.Changes, s.ChangesUnlisted, s.ChangesNote = rep.Changes, rep.Unlisted, rep.Note
	s.ChangesRecord, s.ChangesRecordFile = RecordWalk, rep.Record
	if rep.Exact {
		s.ChangesRecord = RecordExact
	}
	s.ChangesHeld, s.ChangesConflicts, s.ChangesPending = rep.Held, rep.Conflicts, rep.Pending
	s.ChangesIncomplete = rep.Incomplete
	s.DiffBytes = len(rep.Diff)
	s.Diff, s.DiffTruncated = changes.Cap(rep.Diff, MaxDiffBytes)
}

// wroteByTool reports whether a file tool claimed to write rel (the tools
// name absolute paths, or paths relative to the workspace).
func wroteByTool(written []string, ws, rel string) bool {
	abs := filepath.Join(ws, filepath.FromSlash(rel))
	for _, w := range written {
		if !filepath.IsAbs(w) {
			w = filepath.Join(ws, w)
		}
		if filepath.Clean(w) == abs {
			return true
		}
	}
	return false
}

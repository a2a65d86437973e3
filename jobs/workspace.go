package jobs

import (
	"context"

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
}

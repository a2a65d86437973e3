// One live job per workspace (BRIDGE_WORKSPACE_LOCK).

package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

// ErrWorkspaceBusy: a job is already live (queued, running or waiting for
// approval) on the workspace or on one inside or around it.
var ErrWorkspaceBusy = errors.New("the workspace is busy")

// busyLocked refuses ws when the lock is on and a live job holds ws, a
// directory inside it or one around it; the error names that job and what
// the caller can do.
func (r *Registry) busyLocked(ws string) error {
	if !r.opts.WorkspaceLock {
		return nil
	}
	var holder *job
	for _, j := range r.jobs {
		if j.snap.Status.Final() || !overlaps(ws, j.snap.Workspace) {
			continue
		}
		if holder == nil || j.snap.CreatedAt.Before(holder.snap.CreatedAt) {
			holder = j
		}
	}
	if holder == nil {
		return nil
	}
	s := holder.snap
	where := "this workspace"
	if s.Workspace != ws {
		where = "the overlapping workspace " + s.Workspace
	}
	return fmt.Errorf("%w: job %s is %s in %s (accepted %s ago: %q). One job per workspace: steer it with deepseek_agent_message, stop it with deepseek_agent_cancel, or wait for it with deepseek_agent_poll and then start or continue; the owner can allow parallel jobs with BRIDGE_WORKSPACE_LOCK=off",
		ErrWorkspaceBusy, s.ID, s.Status, where, time.Since(s.CreatedAt).Round(time.Second), harness.Clip(s.Task, 80))
}

// overlaps reports whether a and b are the same directory or one is inside
// the other (both are admitted, cleaned absolute paths).
func overlaps(a, b string) bool {
	return a == b || within(a, b) || within(b, a)
}

func within(dir, root string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

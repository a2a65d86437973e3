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
// directory inside it or one around it, and whatever the lock when a
// review's scope is being computed there (the daemon's git reads it outside
// every sandbox); the error names the job and what the caller can do.
func (r *Registry) busyLocked(ws string) error {
	for d := range r.scoping {
		if overlaps(ws, d) {
			return fmt.Errorf("%w: the bridge is computing a review's scope in %s (its git reads the workspace, so no job may start there meanwhile); try again in a moment", ErrWorkspaceBusy, d)
		}
	}
	if !r.opts.WorkspaceLock {
		return nil
	}
	return r.heldLocked(ws)
}

// heldLocked refuses ws when a live job holds it, a directory inside it or
// one around it, whatever the lock.
func (r *Registry) heldLocked(ws string) error {
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

// scopeIn reserves ws for computing a review's scope: it fails when a live
// job holds ws (whatever the lock), and until release no job starts there.
func (r *Registry) scopeIn(ws string) (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.heldLocked(ws); err != nil {
		return nil, err
	}
	if r.scoping == nil {
		r.scoping = map[string]int{}
	}
	r.scoping[ws]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.scoping[ws]--; r.scoping[ws] <= 0 {
			delete(r.scoping, ws)
		}
	}, nil
}

// Continuing a job that ended: a new job that resumes its Claude Code session.

package jobs

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// ContinueRequest is one deepseek_agent_continue call. The ceilings belong
// to the new leg (within the owner's limits, as for a start); the policy may
// only narrow the parent's.
type ContinueRequest struct {
	JobID    string
	Task     string
	MaxSteps int
	Timeout  time.Duration
	Model    string // "" = the parent's
	Thinking string // "" = the parent's
	Policy   *policy.Policy
}

// sessionDir is where Claude Code keeps its sessions under its config dir
// (CLAUDE_CONFIG_DIR/projects/<the workspace, mangled>/<session>.jsonl;
// verified with 2.1.328).
const sessionDir = "projects"

// Continue starts a new job (new id, new nonce) that resumes the session of
// the ended job req.JobID in the same workspace, under its policy narrowed
// by req.Policy. The new job records its parent.
func (r *Registry) Continue(ctx context.Context, req ContinueRequest) (Snapshot, error) {
	r.mu.Lock()
	err := r.continuableLocked(req.JobID)
	var parent Snapshot
	if err == nil {
		parent = r.jobs[req.JobID].snap.clone()
	}
	r.mu.Unlock()
	if err != nil {
		return Snapshot{}, err
	}
	return r.start(ctx, StartRequest{Task: req.Task, MaxSteps: req.MaxSteps, Timeout: req.Timeout,
		Model: req.Model, Thinking: req.Thinking, Policy: req.Policy}, &parent)
}

// continuableLocked says why the job id cannot be continued (nil when it can).
func (r *Registry) continuableLocked(id string) error {
	j, ok := r.jobs[id]
	switch {
	case !ok:
		return r.unknownLocked(id)
	case !j.snap.Status.Final():
		return fmt.Errorf("%w: job %s is still %s: send it a message with deepseek_agent_message, or wait for it with deepseek_agent_poll and continue it once it has ended", ErrBadInput, id, j.snap.Status)
	case j.snap.SessionID == "":
		return fmt.Errorf("%w: job %s ended (%s) before its agent began a conversation, so there is nothing to resume: start a new job with deepseek_agent_start", ErrBadInput, id, j.snap.StopReason)
	}
	return nil
}

// narrowed is the policy of a continued job: the parent's, narrowed by the
// caller's, with the owner's floor (as it is now) over both. The parent's
// ceilings do not carry over: each leg has its own.
func (r *Registry) narrowed(parent *policy.Enforced, caller *Policy) (policy.Enforced, error) {
	if parent == nil {
		return r.enforced(caller)
	}
	base := parent.Policy
	base.MaxSteps, base.TimeoutSeconds, base.MaxCostUSD = 0, 0, 0
	if fp := r.opts.Floor.AppendSystemPrompt; fp != "" { // the floor adds its own again
		base.AppendSystemPrompt = strings.TrimPrefix(strings.TrimPrefix(base.AppendSystemPrompt, fp), "\n\n")
	}
	x := base
	if caller != nil {
		if err := caller.Validate(); err != nil {
			return policy.Enforced{}, fmt.Errorf("%w: policy: %v", ErrBadInput, err)
		}
		for _, l := range []struct {
			name           string
			parent, caller []string
		}{{"write_paths", base.WritePaths, caller.WritePaths}, {"commands", base.Commands, caller.Commands}} {
			if err := subset(l.name, l.parent, l.caller); err != nil {
				return policy.Enforced{}, err
			}
		}
		x = policy.Merge(base, *caller, "").Policy
	}
	return policy.Merge(r.opts.Floor, x, r.opts.FloorFile), nil
}

// subset refuses an allow list of the caller's that is not within the
// parent's: a continue can only narrow.
func subset(name string, parent, caller []string) error {
	if parent == nil || caller == nil {
		return nil
	}
	for _, v := range caller {
		if !slices.Contains(parent, v) {
			return fmt.Errorf("%w: policy.%s may only narrow the parent job's %s %q: %q is not in it", ErrBadInput, name, name, parent, v)
		}
	}
	return nil
}

// maxSessionBytes bounds the session files a continue copies.
const maxSessionBytes = 256 << 20

// seedSession copies the parent's session files into the new job's config
// dir, so that its harness can resume the session. The parent's config dir
// was writable in its jail, so nothing in it is trusted: a link (the dir
// itself, or anything in it) is refused or skipped, only directories and
// regular files are copied, and the whole copy is bounded. The parent has ended: nothing of it runs to swap a
// path meanwhile.
func seedSession(from, to string) error {
	src := filepath.Join(from, sessionDir)
	st, err := os.Lstat(src)
	switch {
	case err != nil:
		return fmt.Errorf("the parent job's session files are gone (%w): start a new job", err)
	case !st.IsDir():
		return fmt.Errorf("the parent job's session dir %s is not a directory (%s): start a new job", src, st.Mode().Type())
	}
	dst := filepath.Join(to, sessionDir)
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o700)
		case !d.Type().IsRegular():
			return nil // a link or a device: not session data
		}
		in, err := os.Open(p) // a regular file by Lstat (WalkDir); nothing swaps it now
		if err != nil {
			return err
		}
		defer in.Close()
		if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
			return err
		}
		w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, io.LimitReader(in, maxSessionBytes-total+1))
		total += n
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil && total > maxSessionBytes {
			err = fmt.Errorf("the parent job's session files exceed %d MiB: start a new job", maxSessionBytes>>20)
		}
		return err
	})
}

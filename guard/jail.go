package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Files of a job's harness dir the audit uses.
const (
	baselineFile = "runs-later.json"
	jailTmpDir   = "tmp"
)

// EventQuarantine is the audit-log event of a path moved aside at a job's end.
const EventQuarantine = "quarantine"

// jail returns the argv prefix that starts the job's harness in its own view
// of the filesystem (sandbox.JailArgs) that jp, the plan's, describes: it
// makes the jail's /tmp, and binds the workspace and the write_paths dirs
// by descriptor.
func (g *Guard) jail(spec *harness.Spec, jp *jailPlan) ([]string, error) {
	if err := os.MkdirAll(jp.Options.Tmp, 0o700); err != nil {
		return nil, fmt.Errorf("jail /tmp: %w", err)
	}
	writable := writableDirs(spec.Workspace, jp.Writable)
	if jp.Overlay {
		return g.overlayJail(spec, jp, writable)
	}
	// The workspace was admitted by its path, with every link resolved; it
	// is bound by a descriptor opened now without following any, so a
	// component swapped for a link since (by a job whose workspace holds
	// this one) fails here instead of mounting where the link leads.
	fds := map[string]int{}
	spec.CloseWrapFiles()
	for _, d := range append([]string{spec.Workspace}, writable...) {
		f, err := sandbox.OpenDirNoSymlinks(d)
		if err != nil {
			spec.CloseWrapFiles()
			return nil, fmt.Errorf("jail: the workspace changed since it was admitted: %w", err)
		}
		fds[d] = 3 + len(spec.WrapFiles) // exec.Cmd.ExtraFiles start at 3
		spec.WrapFiles = append(spec.WrapFiles, f)
	}
	o := jp.Options
	o.BindFDs = fds
	o.WritableDirs = writable
	o.MapUser = mapUser()
	args, err := sandbox.JailArgs(o)
	if err != nil {
		spec.CloseWrapFiles()
		return nil, err
	}
	// The jail starts in the job's own PID namespace, whose first process
	// mounts its /proc.
	spec.WrapAttr, spec.OwnPIDNamespace = sandbox.PIDNamespaceAttr, true
	return sandbox.ProcWrapArgs(g.exe, args), nil
}

// mapUser is the daemon's uid and gid for the jail to map back, when the
// jail starts as root of a user namespace of its own (a daemon that is not
// root: sandbox.NamespaceAttr).
func mapUser() *[2]int {
	if uid := os.Getuid(); uid != 0 {
		return &[2]int{uid, os.Getgid()}
	}
	return nil
}

// release ends what a job held while it ran, once its processes are gone:
// its token at the approval service, and its private /tmp.
func (g *Guard) release(jobID string) {
	g.service.Unregister(jobID)
	if err := os.RemoveAll(filepath.Join(g.dir.HarnessDir(jobID), jailTmpDir)); err != nil {
		g.log.Warn().Err(err).Str("job", jobID).Msg("could not remove the job's private /tmp")
	}
}

// baseline scans the workspace for what runs later (sandbox.ScanRunsLater)
// and keeps the scan in file, in the job's harness dir, for Audit, which
// may run in a later daemon.
func (g *Guard) baseline(jobID, ws, file string) (sandbox.RunsLaterScan, error) {
	start := time.Now()
	scan, err := sandbox.ScanRunsLater(ws, sandbox.DefaultRunsLaterLimit)
	if err != nil {
		return scan, err
	}
	if err := writeJSON(file, scan); err != nil {
		return scan, err
	}
	log := g.log.Info()
	if scan.Truncated {
		log = g.log.Warn().Int("unlisted_dirs", scan.Unlisted)
	}
	log.Str("job", jobID).Int("runs_later", len(scan.Items)).Int("entries", scan.Visited).
		Dur("took", time.Since(start)).Msg("recorded what in the workspace runs later, to compare at the job's end")
	return scan, nil
}

// Audit compares the workspace with its scan at the job's start and moves
// aside (sandbox.Quarantine) every git dir, gitfile, git config, hook and
// runs-later file the job created or changed, in every end state. Each one
// is logged and written to the audit log with how to put it back. It first
// releases what the job held (its approval token, its private /tmp).
func (g *Guard) Audit(_ context.Context, jobID, ws string) sandbox.AuditResult {
	g.release(jobID)
	if changes.IsOverlay(g.dir.ChangesDir(jobID)) {
		// An overlay job wrote nothing into its workspace; and its harness
		// dir, where a baseline would lie, is the job's to write.
		return sandbox.AuditResult{}
	}
	log := g.log.With().Str("job", jobID).Logger()
	var before sandbox.RunsLaterScan
	if err := statedir.ReadJSON(filepath.Join(g.dir.HarnessDir(jobID), baselineFile), &before); err != nil {
		if os.IsNotExist(err) {
			return sandbox.AuditResult{} // the job never reached its harness
		}
		log.Warn().Err(err).Msg("the workspace audit has no start record")
		return sandbox.AuditResult{Note: "the workspace could not be audited: its start record is unreadable (" + err.Error() + "); check it for new .git dirs, hooks and rc files before you run git in it"}
	}
	after, err := sandbox.ScanRunsLater(ws, sandbox.DefaultRunsLaterLimit)
	if err != nil {
		log.Warn().Err(err).Msg("the workspace audit could not scan the workspace")
		return sandbox.AuditResult{Note: "the workspace could not be audited at the job's end (" + err.Error() + ")"}
	}
	var res sandbox.AuditResult
	if before.Truncated || after.Truncated {
		res.Note = fmt.Sprintf("the workspace is too large to audit whole (over %d entries): what the job planted in the %d directories not looked at is not quarantined", sandbox.DefaultRunsLaterLimit, max(before.Unlisted, after.Unlisted))
	}
	res.Quarantined = sandbox.Quarantine(ws, jobID, before.Planted(after))
	for _, q := range res.Quarantined {
		reason := fmt.Sprintf("the job %s %s (%s), which other programs run outside the sandbox", q.Change, q.Path, q.What)
		ev := log.Warn().Str("path", q.Path).Str("what", q.What).Str("change", q.Change)
		if q.MovedTo != "" {
			reason += fmt.Sprintf("; moved to %s: inspect it there, and put it back on purpose with `%s`", q.MovedTo, q.RestoreHint())
			ev = ev.Str("moved_to", q.MovedTo)
		}
		if q.Error != "" {
			reason += "; " + q.Error
			ev = ev.Str("error", q.Error)
		}
		ev.Msg("quarantined what the job planted")
		if err := approvals.AppendAudit(g.dir, approvals.AuditRecord{Event: EventQuarantine, JobID: jobID, Summary: q.Path, Reason: reason, By: "bridge"}); err != nil {
			log.Warn().Err(err).Msg("audit log")
		}
	}
	return res
}

// plainDirsIn checks that each component of the write dir w (inside ws)
// that the upper dir holds is a plain directory there, not a link, a
// whiteout or another file.
func plainDirsIn(upper, ws, w string) error {
	rel, err := filepath.Rel(ws, w)
	if err != nil {
		return err
	}
	p := upper
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, c)
		st, err := os.Lstat(p)
		if os.IsNotExist(err) {
			return nil // the rest is the workspace's, checked at admission
		}
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory in its overlay", w)
		}
	}
	return nil
}

// writableDirs makes each dir of a policy's write_paths (relative to ws)
// and returns those the jail may bind read-write: a dir whose path holds a
// symlink is left out (a bind would follow it, maybe out of the workspace),
// so writes there fail in the OS sandbox as well as by the rules.
func writableDirs(ws string, rels []string) []string {
	var out []string
	for _, rel := range rels {
		d := filepath.Join(ws, filepath.FromSlash(rel))
		if !strings.HasPrefix(d, ws+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Lstat(d); os.IsNotExist(err) {
			// Made only below an existing dir of the workspace reached without a symlink.
			anc := filepath.Dir(d)
			for _, err := os.Lstat(anc); os.IsNotExist(err) && anc != ws; _, err = os.Lstat(anc) {
				anc = filepath.Dir(anc)
			}
			if real, err := filepath.EvalSymlinks(anc); err == nil && real == anc && (anc == ws || strings.HasPrefix(anc, ws+string(filepath.Separator))) {
				_ = os.MkdirAll(d, 0o755)
			}
		}
		if real, err := filepath.EvalSymlinks(d); err == nil && real == d {
			out = append(out, d)
		}
	}
	return out
}

// overlayJail is the jail of a job that writes into an overlay: the
// overlay's upper, work and mount dirs in the job's changes dir (with what
// a parent job did not land carried in), the workspace's descriptor for the
// wrapper to check the lower layer against, and the jail's argv behind the
// wrapper (sandbox.Overlay.WrapArgs), started in its own user and mount
// namespace.
func (g *Guard) overlayJail(spec *harness.Spec, jp *jailPlan, writable []string) ([]string, error) {
	dir := g.dir.ChangesDir(spec.JobID)
	st := changes.OverlayStart{Workspace: spec.Workspace, Land: policy.LandAuto}
	if pol := spec.Policy; pol != nil {
		st.DenyPaths = pol.DenyPaths
		if pol.Land != "" {
			st.Land = pol.Land
		}
	}
	if spec.Parent != "" && changes.IsOverlay(g.dir.ChangesDir(spec.Parent)) {
		carried, started, err := changes.Carry(g.dir.ChangesDir(spec.Parent), dir, spec.JobID)
		if err != nil {
			return nil, err
		}
		if carried {
			st.CarriedFrom, st.Started = spec.Parent, started
			g.log.Info().Str("job", spec.JobID).Str("parent", spec.Parent).Msg("the parent job's changes that did not land are carried into this job's overlay")
		}
	}
	st, err := changes.StartOverlay(dir, st)
	if err != nil {
		return nil, err
	}
	// A write_paths dir is bound from the merged view by its path: what a
	// carried upper dir holds along it (a link to the home, a whiteout)
	// would be what bubblewrap binds read-write.
	ov := changes.OverlayOf(dir, spec.Workspace)
	for _, w := range writable {
		if err := plainDirsIn(ov.Upper, spec.Workspace, w); err != nil {
			return nil, fmt.Errorf("jail: the changes carried from job %s: %w: land or discard them first (`bridgectl jobs %s --changes`)", spec.Parent, err, spec.Parent)
		}
	}
	spec.CloseWrapFiles()
	f, err := sandbox.OpenDirNoSymlinks(spec.Workspace)
	if err != nil {
		return nil, fmt.Errorf("jail: the workspace changed since it was admitted: %w", err)
	}
	spec.WrapFiles = []*os.File{f} // fd 3
	o := jp.Options
	o.Merged = ov.Merged
	o.WritableDirs = writable
	o.MapUser = mapUser()
	args, err := sandbox.JailArgs(o)
	if err != nil {
		spec.CloseWrapFiles()
		return nil, err
	}
	wrap, err := ov.WrapArgs(g.exe, 3, args)
	if err != nil {
		spec.CloseWrapFiles()
		return nil, err
	}
	spec.WrapAttr, spec.OwnPIDNamespace = sandbox.NamespaceAttr, true
	return wrap, nil
}

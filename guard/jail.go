package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/approvals"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
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
// of the filesystem (sandbox.JailArgs): the system dirs, the workspace, the
// harness's config dir, a private /tmp, the owner's runtime roots, the
// bridge binary and Claude Code read-only, and of the state dir only the
// approval queue and the audit log, which the approval child writes, and
// the switches (the approval-off flag), which it reads. The
// harness files the guard wrote are bound read-only over themselves.
func (g *Guard) jail(spec *harness.Spec, files []string) ([]string, error) {
	tmp := filepath.Join(spec.ConfigDir, jailTmpDir)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("jail /tmp: %w", err)
	}
	for _, d := range []string{g.dir.Approvals(), g.dir.Switches()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("jail: %w", err)
		}
	}
	// The audit log is bound as a file: it must exist.
	f, err := os.OpenFile(g.dir.AuditLog(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	f.Close()
	ro := []string{g.exe, g.dir.Switches()}
	if g.harnessBin != "" {
		ro = append(ro, filepath.Dir(g.harnessBin))
	}
	ro = append(ro, g.runtime...)
	ro = append(ro, files...)
	var writable []string
	pol := spec.Policy
	if pol != nil && pol.RestrictsWrites() && !pol.ReadOnly() {
		writable = writableDirs(spec.Workspace, pol.WritableDirs())
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
	return sandbox.JailArgs(sandbox.JailOptions{
		BindFDs:           fds,
		Bwrap:             g.bwrap,
		Workspace:         spec.Workspace,
		WorkspaceReadOnly: pol != nil && pol.RestrictsWrites(),
		WritableDirs:      writable,
		ConfigDir:         spec.ConfigDir,
		Tmp:               tmp,
		ReadWrite:         []string{g.dir.Approvals(), g.dir.AuditLog()},
		ReadOnly:          ro,
		Hide:              hiddenInRuntime(g.runtime, g.home),
	})
}

// baseline scans the workspace for what runs later (sandbox.ScanRunsLater)
// and keeps the scan in the job's harness dir for Audit, which may run in a
// later daemon.
func (g *Guard) baseline(jobID, ws string) (sandbox.RunsLaterScan, error) {
	start := time.Now()
	scan, err := sandbox.ScanRunsLater(ws, sandbox.DefaultRunsLaterLimit)
	if err != nil {
		return scan, err
	}
	if err := writeJSON(filepath.Join(g.dir.HarnessDir(jobID), baselineFile), scan); err != nil {
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

// runsLaterDenies are the paths of scan the job's commands must not write:
// every git dir's config, hooks and info, the hook dirs and the runs-later
// files, outermost only (a denied dir covers what is in it). Git dirs
// themselves stay writable: objects, refs and the index are the job's work.
func runsLaterDenies(ws string, scan sandbox.RunsLaterScan) []string {
	keys := make([]string, 0, len(scan.Items))
	for k, it := range scan.Items {
		if it.What != "git dir" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out, dirs []string
	for _, k := range keys {
		covered := false
		for _, d := range dirs {
			if strings.HasPrefix(k, d+"/") {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		if scan.Items[k].Sum == "" || scan.Items[k].Sum == "d" {
			dirs = append(dirs, k)
		}
		out = append(out, filepath.Join(ws, filepath.FromSlash(k)))
	}
	return out
}

// Audit compares the workspace with its scan at the job's start and moves
// aside (sandbox.Quarantine) every git dir, gitfile, git config, hook and
// runs-later file the job created or changed, in every end state. Each one
// is logged and written to the audit log with how to put it back.
func (g *Guard) Audit(_ context.Context, jobID, ws string) sandbox.AuditResult {
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

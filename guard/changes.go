package guard

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// recordStart keeps the record of the workspace at the job's start
// (changes.Start) in the job's changes dir, outside its jail. A walk that
// failed leaves no record: the job's end then says its changes are unknown
// rather than calling every file new. Only a record that cannot be written
// refuses the job, as a start record the audit needs does. The job's
// deny paths are kept in the record: their files are never copied, read or
// diffed, at the start or at the end.
func (g *Guard) recordStart(jobID, ws string, deny []string, scan sandbox.SecretScan, walkErr error) error {
	dir := g.dir.ChangesDir(jobID)
	log := g.log.With().Str("job", jobID).Logger()
	if walkErr != nil {
		log.Warn().Err(walkErr).Msg("no record of the workspace at the job's start: its changes will not be listed")
		return nil
	}
	start := time.Now()
	rec, err := changes.Start(ws, scan, dir, changes.Options{Git: g.git, DenyPaths: deny, Full: true})
	if err != nil {
		return err
	}
	ev := log.Info().Int("files", len(rec.Files)).Int64("copied_bytes", rec.CopiedBytes).Dur("took", time.Since(start))
	if rec.Git != nil {
		ev = ev.Str("git_head", rec.Git.Head).Int("git_dirty", len(rec.Git.Dirty)).Str("git_error", rec.Git.Error)
	}
	ev.Msg("recorded the workspace at the job's start, to list its changes at the end")
	return nil
}

// ErrNoRecord: the job has no record of its workspace's start (it never
// reached its harness, or the walk at its start failed).
var ErrNoRecord = errors.New("no record of the workspace at the job's start")

// Changes compares the workspace with the record of the job's start
// (changes.Compare) and keeps the whole diff with it. It runs after Audit,
// in every end state and at the next start after a crash, so the git
// metadata it reads is back to what it was at the start. Its reads stop
// after changes.MaxCompareTime (a cancelled ctx does not stop them: the
// job's end still lists what it changed).
func (g *Guard) Changes(ctx context.Context, jobID, ws string) (changes.Report, error) {
	dir := g.dir.ChangesDir(jobID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return changes.Report{}, ErrNoRecord
	}
	if changes.IsOverlay(dir) {
		start := time.Now()
		rep, err := changes.FromOverlay(ctx, ws, dir, g.git, true)
		if err != nil {
			g.log.Warn().Err(err).Str("job", jobID).Msg("the job's changes could not be recorded from its overlay")
			return changes.Report{}, err
		}
		g.log.Info().Str("job", jobID).Int("changes", len(rep.Changes)+rep.Unlisted).Int("held", rep.Held).Int("conflicts", rep.Conflicts).
			Int("pending", rep.Pending).Int("diff_bytes", len(rep.Diff)).Dur("took", time.Since(start)).
			Msg("recorded what the job wrote from its overlay, and landed what a person reads in a diff")
		return rep, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), changes.MaxCompareTime)
	defer cancel()
	rep, err := changes.Compare(ctx, ws, dir, g.git)
	if err != nil {
		g.log.Warn().Err(err).Str("job", jobID).Msg("the job's changes could not be listed")
		return changes.Report{}, err
	}
	g.log.Info().Str("job", jobID).Int("changes", len(rep.Changes)).Int("diff_bytes", len(rep.Diff)).Msg("listed what the job changed in its workspace")
	return rep, nil
}

package cli

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
)

// unfinishedJobs lists the jobs of the state dir that have not ended
// (queued, running, waiting_approval), newest first. While a daemon runs
// these are its jobs: it marks older unfinished snapshots interrupted when it
// starts. Unreadable snapshots are left to `bridgectl jobs` to report.
func (c *ctl) unfinishedJobs() []jobs.Snapshot {
	snaps, _ := jobs.LoadAll(c.dir)
	var out []jobs.Snapshot
	for _, s := range snaps {
		if !s.Status.Final() {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

// printJobLines writes one line per job: id prefix, status, task clipped
// (escaped: the task comes from the MCP caller).
func printJobLines(w io.Writer, snaps []jobs.Snapshot) {
	for _, s := range snaps {
		fmt.Fprintf(w, "  %s  %-16s  %s\n", short(s.ID), s.Status, oneLine(s.Task, 60))
	}
}

// countJobs is "1 job" or "N jobs".
func countJobs(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// interruptWatch remembers the jobs that were unfinished before the daemon
// was stopped, so that what the stop did to them can be said afterwards.
type interruptWatch struct {
	before []jobs.Snapshot
	since  time.Time
}

// watchInterrupts records the unfinished jobs of a daemon about to be stopped.
func (c *ctl) watchInterrupts() interruptWatch {
	return interruptWatch{before: c.unfinishedJobs(), since: time.Now()}
}

// reportInterrupted says, after the daemon was stopped (and maybe started
// again), which jobs ended as interrupted — the ones unfinished before, and
// any that started meanwhile and were interrupted since — and which are still
// recorded as unfinished because the daemon was killed before it could mark
// them (its next start does). Jobs that ended otherwise are not named.
func (c *ctl) reportInterrupted(iw interruptWatch) {
	w := c.e.Stdout
	was := map[string]jobs.Snapshot{}
	for _, s := range iw.before {
		was[s.ID] = s
	}
	now := map[string]jobs.Snapshot{}
	all, _ := jobs.LoadAll(c.dir)
	for _, s := range all {
		now[s.ID] = s
	}
	var interrupted, stale []jobs.Snapshot
	for _, b := range iw.before {
		s, ok := now[b.ID]
		switch {
		case !ok:
		case s.Status == jobs.StatusInterrupted:
			interrupted = append(interrupted, b) // shown with the status it had
		case !s.Status.Final():
			stale = append(stale, b)
		}
	}
	for _, s := range all {
		if _, seen := was[s.ID]; !seen && s.Status == jobs.StatusInterrupted && s.EndedAt != nil && !s.EndedAt.Before(iw.since) {
			interrupted = append(interrupted, s)
		}
	}
	if len(interrupted) > 0 {
		fmt.Fprintf(w, "interrupted %s:\n", countJobs(len(interrupted)))
		printJobLines(w, interrupted)
		fmt.Fprintln(w, "(`bridgectl jobs ID` shows the work each had done; they have no result)")
	}
	if len(stale) > 0 {
		verb := "was"
		if len(stale) > 1 {
			verb = "were"
		}
		fmt.Fprintf(w, "%s %s not finished and ended with the daemon, which did not record it (it is killed when it does not exit on SIGTERM): the snapshots read unfinished until the daemon's next start marks them interrupted:\n", countJobs(len(stale)), verb)
		printJobLines(w, stale)
	}
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/changes"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/jobs"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// commandFacts is a command's duration and how often the job ran it.
func commandFacts(c jobs.Command) string {
	var parts []string
	if c.DurationMS != nil {
		parts = append(parts, (time.Duration(*c.DurationMS) * time.Millisecond).Round(time.Millisecond).String())
	}
	if c.Runs > 1 {
		parts = append(parts, fmt.Sprintf("run %d times", c.Runs))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  (" + strings.Join(parts, ", ") + ")"
}

// printChanges shows what the job changed on disk and the failures it left.
// Paths come from the workspace, which the job wrote: shown visible.
func printChanges(w io.Writer, s jobs.Snapshot) {
	for _, f := range s.UnresolvedFailures {
		fmt.Fprintf(w, "UNRESOLVED: %s failed and never succeeded afterwards\n", oneLine(f, 200))
	}
	for _, c := range s.Changes {
		line := fmt.Sprintf("%-8s %s (%d bytes", c.Change, visibleLine(c.Path, 1000), c.Size)
		if c.By != "" {
			line += ", by " + c.By
		}
		switch {
		case c.Secret:
			line += ", secret: contents never read"
		case c.Binary:
			line += ", binary"
		}
		line += ")"
		if c.Status != "" {
			line += " " + strings.ToUpper(c.Status)
		}
		if c.Held != "" {
			line += " (held back: " + c.Held + "; `bridgectl jobs " + s.ID + " --promote PATH` puts it in the workspace)"
		}
		if c.Note != "" {
			line += " [" + visibleLine(c.Note, 300) + "]"
		}
		fmt.Fprintf(w, "changed:    %s\n", line)
	}
	if s.ChangesUnlisted > 0 {
		fmt.Fprintf(w, "changed:    and %d more files\n", s.ChangesUnlisted)
	}
	if s.ChangesNote != "" {
		fmt.Fprintf(w, "changes:    %s\n", visibleLine(s.ChangesNote, 1000))
	}
	if s.DiffBytes > 0 {
		fmt.Fprintf(w, "diff:       %d bytes: `bridgectl jobs %s --diff`\n", s.DiffBytes, s.ID)
	}
}

// printDiff prints the job's whole diff, its control characters made
// visible (the files are the job's: their bytes must not drive the terminal).
func printDiff(w io.Writer, dir statedir.Dir, s jobs.Snapshot) error {
	b, err := os.ReadFile(filepath.Join(dir.ChangesDir(s.ID), changes.DiffFile))
	switch {
	case errors.Is(err, os.ErrNotExist) && !s.Status.Final():
		return fmt.Errorf("job %s is still %s: its diff is made when it ends", s.ID, s.Status)
	case errors.Is(err, os.ErrNotExist):
		why := s.ChangesNote
		if why == "" {
			why = "the job never reached its harness, or its files have expired"
		}
		return fmt.Errorf("job %s has no diff: %s", s.ID, why)
	case err != nil:
		return fmt.Errorf("read the diff of job %s: %w", s.ID, err)
	case len(b) == 0:
		fmt.Fprintf(w, "job %s changed no text file (%d files changed on disk: `bridgectl jobs %s` lists them)\n", s.ID, len(s.Changes)+s.ChangesUnlisted, s.ID)
		return nil
	}
	// Tabs stay tabs (code is indented with them); every other control is
	// written as visible writes it.
	parts := strings.Split(string(b), "\t")
	for i, p := range parts {
		parts[i] = visible(p, len(p))
	}
	fmt.Fprint(w, strings.Join(parts, "\t"))
	return nil
}

// workspacePaths resolves each relative path against the working
// directory when that is inside the workspace (the owner in ws/sub naming
// file means ws/sub/file), else against the workspace itself.
func workspacePaths(ws string, paths []string) []string {
	wd, err := os.Getwd()
	if err != nil || (wd != ws && !strings.HasPrefix(wd, ws+string(filepath.Separator))) {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		out[i] = p
	}
	return out
}

// settleChanges is --changes, --apply, --promote and --discard: the
// owner's view of, and decisions on, an overlay job's record.
func settleChanges(w io.Writer, dir statedir.Dir, s jobs.Snapshot, apply, promote, discard bool, paths []string, asJSON bool) error {
	cd := dir.ChangesDir(s.ID)
	if !changes.IsOverlay(cd) {
		return fmt.Errorf("job %s did not write into an overlay (its changes went straight to the workspace): `bridgectl jobs %s` lists what it changed", s.ID, s.ID)
	}
	paths = workspacePaths(s.Workspace, paths)
	var rec *changes.OverlayRecord
	var err error
	switch {
	case apply:
		rec, err = changes.Apply(s.Workspace, cd)
	case promote:
		rec, err = changes.Promote(s.Workspace, cd, paths)
	case discard:
		rec, err = changes.Discard(s.Workspace, cd, paths)
	default:
		rec, err = changes.LoadOverlayRecord(cd)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("job %s is %s: its record is made when it ends", s.ID, s.Status)
		}
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", s.ID, err)
	}
	if asJSON {
		return printJSON(w, rec)
	}
	counts := map[string]int{}
	for _, c := range rec.Changes {
		counts[c.Status]++
		line := fmt.Sprintf("%-9s %-8s %s", c.Status, c.Change, visibleLine(c.Path, 1000))
		if c.Kind != "" {
			line += " (" + c.Kind + ")"
		}
		if c.Held != "" {
			line += " — held: " + c.Held
		}
		if c.Note != "" {
			line += " [" + visibleLine(c.Note, 300) + "]"
		}
		fmt.Fprintln(w, line)
	}
	var sum []string
	for _, st := range []string{changes.StatusLanded, changes.StatusPromoted, changes.StatusPending, changes.StatusHeld, changes.StatusConflict, changes.StatusFailed, changes.StatusDiscarded, changes.StatusCarried} {
		if counts[st] > 0 {
			sum = append(sum, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(sum) == 0 {
		sum = []string{"no change"}
	}
	fmt.Fprintf(w, "job %s: %s\n", s.ID, strings.Join(sum, ", "))
	if rec.CarriedTo != "" {
		fmt.Fprintf(w, "what did not land was carried into job %s, which continued this one\n", rec.CarriedTo)
	} else if n := rec.Unlanded(); n > 0 {
		fmt.Fprintf(w, "%d wait for you: `bridgectl jobs %s --diff` shows them; --apply, --promote PATH... or --discard [PATH...] decides\n", n, s.ID)
	}
	return nil
}

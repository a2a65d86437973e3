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

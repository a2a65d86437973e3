package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Bounds of the comparison at a job's end.
const (
	// MaxChanges is how many changed paths a report lists; the rest are counted.
	MaxChanges = 1000
	// MaxDiffFile is the largest file (old or new) the diff shows.
	MaxDiffFile = 1 << 20
	// MaxDiffTotal bounds the whole diff kept with the job.
	MaxDiffTotal = 16 << 20
	// MaxCompareTime bounds the reads of the comparison (the walk is
	// bounded by its entries): the job's end, and the slot and token it
	// holds, wait for it.
	MaxCompareTime = 60 * time.Second
)

// The kinds of change.
const (
	Created  = "created"
	Modified = "modified"
	Deleted  = "deleted"
)

// Change is one file the job created, modified or deleted, seen on disk.
type Change struct {
	Path   string `json:"path" jsonschema:"relative to the workspace"`
	Change string `json:"change" jsonschema:"created, modified or deleted"`
	// Size is the file's size now (for a deleted file, its size at the start).
	Size    int64  `json:"size" jsonschema:"bytes now; for a deleted file, its size at the start"`
	OldSize *int64 `json:"old_size,omitempty" jsonschema:"bytes at the start, for a modified file"`
	// By says who made the change, when that can be told: "tool" (a
	// Write/Edit the harness reported) or "command" (not a file tool's: a
	// shell command of the job).
	By string `json:"by,omitempty" jsonschema:"tool (a Write/Edit call reported it) or command (no file tool did: a shell command); empty when neither ran"`
	// Secret: a secret file by name, or a deny path of the job's policy,
	// listed by path and size only: never read or diffed.
	Secret bool `json:"secret,omitempty" jsonschema:"a secret file (.env, keys) or a deny path of the job's policy: its contents are never read or shown"`
	Binary bool `json:"binary,omitempty" jsonschema:"not text: listed, not diffed"`
	// Note says why the diff does not show it, or what else changed.
	Note string `json:"note,omitempty" jsonschema:"why the diff does not show this file, or what else changed (mode, link)"`
	// Status is where the change is, for a job that wrote into an overlay
	// (StatusLanded, StatusHeld, …; "" for the walk's record).
	Status string `json:"status,omitempty" jsonschema:"landed (in the workspace), pending (waits for bridgectl jobs ID --apply), held (waits for --promote), conflict (the owner changed the file during the job: nothing of it landed), failed, promoted, discarded, carried"`
	// Kind is what the entry is when not a regular file.
	Kind string `json:"kind,omitempty" jsonschema:"dir, link or special; empty for a regular file"`
	// Held says why a held change is held back.
	Held string `json:"held,omitempty" jsonschema:"why the change is held back until the owner promotes it"`
}

// Report is what a job changed in its workspace.
type Report struct {
	Changes []Change
	// Unlisted counts the changes past MaxChanges.
	Unlisted int
	// Diff is the unified diff of the text files (at most MaxDiffTotal).
	Diff string
	// Note says what the comparison could not see or do ("" when nothing).
	Note string
	// Exact: the record was read from the job's overlay (every change, by
	// content); false for the walk's record, which may miss some.
	Exact bool
	// Record is the file holding every change of an overlay job.
	Record string
	// Held, Conflicts and Pending count the changes with those statuses.
	Held, Conflicts, Pending int
	// Incomplete: a full walk record that could not see everything (past
	// its limit, out of time, files compared by size and mtime alone): the
	// changes listed may not be all.
	Incomplete bool
}

// Compare walks ws again, compares it with the start record kept in dir,
// and writes the whole diff to dir/DiffFile. It reads no more files once
// ctx is done (the guard gives it MaxCompareTime): what still differs is
// then listed unread, and the report's Note says so. It runs git as git
// says. An error means there was no usable start record (the job never
// started, or the record is damaged).
func Compare(ctx context.Context, ws, dir string, git Git) (Report, error) {
	rec, err := LoadRecord(dir)
	if err != nil {
		return Report{}, err
	}
	limit := sandbox.DefaultSecretScanLimit
	var scan sandbox.SecretScan
	if rec.Full {
		limit = sandbox.DefaultRunsLaterLimit
		scan, err = sandbox.WorkspaceRecordScan(ws, limit)
	} else {
		scan, err = sandbox.WorkspaceScan(ws, limit, true)
	}
	if err != nil {
		return Report{}, fmt.Errorf("walk the workspace: %w", err)
	}
	tree, err := sandbox.OpenTree(ws)
	if err != nil {
		return Report{}, fmt.Errorf("open the workspace: %w", err)
	}
	defer tree.Close()
	c := comparer{ws: ws, dir: dir, rec: rec, tree: tree, git: git, unverified: new(int)}
	var notes []string
	if rec.Truncated || scan.Truncated {
		notes = append(notes, fmt.Sprintf("the workspace is too large to compare whole (over %d entries): changes in the %d directories not looked at are not listed", limit, max(rec.Unlisted, scan.Unlisted)))
	}
	if rec.Git != nil && rec.Git.Error != "" {
		notes = append(notes, "git could not be asked at the start ("+rec.Git.Error+")")
	}
	if rec.Uncopied > 0 {
		notes = append(notes, fmt.Sprintf("%d files had no copy kept at the start (past %d MiB or %d files of copies): a change to one is listed without a diff", rec.Uncopied, MaxCopyTotal>>20, MaxCopyFiles))
	}
	now := make(map[string]sandbox.FileEntry, len(scan.Files))
	for _, f := range scan.Files {
		now[f.Path] = f
	}
	paths := make([]string, 0, len(now)+len(rec.Files))
	for p := range rec.Files {
		paths = append(paths, p)
	}
	for p := range now {
		if _, ok := rec.Files[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var rep Report
	var all []Change // every change, for the full record's file
	var diff strings.Builder
	diffCut := false
	late := 0 // changes listed unread because ctx was done
	for _, p := range paths {
		old, had := rec.Files[p]
		cur, has := now[p]
		// Past either bound no more file is read: what still differs by
		// its size, time or mode is listed (or counted) unread.
		c.full = diff.Len() >= MaxDiffTotal || !rec.Full && len(rep.Changes) >= MaxChanges
		c.late = ctx.Err() != nil
		ch, d, ok := c.compare(p, old, had, cur, has)
		if !ok {
			continue
		}
		if strings.Contains(ch.Note, notReadLate) {
			late++
		}
		if len(rep.Changes) >= MaxChanges && !rec.Full {
			rep.Unlisted++
			continue
		}
		if d != "" {
			if diff.Len()+len(d) > MaxDiffTotal {
				diffCut = true
				ch.Note = joinNote(ch.Note, "left out of the diff: the whole diff reached its 16 MiB bound")
			} else {
				diff.WriteString(d)
			}
		}
		if len(rep.Changes) >= MaxChanges {
			rep.Unlisted++
			all = append(all, ch)
			continue
		}
		rep.Changes = append(rep.Changes, ch)
		if rec.Full {
			all = append(all, ch)
		}
	}
	if rep.Unlisted > 0 && !rec.Full {
		notes = append(notes, fmt.Sprintf("%d more changed files are not listed (at most %d are)", rep.Unlisted, MaxChanges))
	}
	if diffCut {
		notes = append(notes, "the diff is cut: it reached its 16 MiB bound")
	}
	if late > 0 {
		notes = append(notes, fmt.Sprintf("the comparison ran out of time: %d changed files are listed without being read or diffed", late))
	}
	if n := *c.unverified; n > 0 && rec.Full {
		notes = append(notes, fmt.Sprintf("%d files could not be compared by their contents (past %d MiB of hashing at the start, or unreadable, or out of time): same size and mtime were taken for unchanged", n, MaxHashTotal>>20))
	}
	rep.Incomplete = rec.Full && (rec.Truncated || scan.Truncated || late > 0 || *c.unverified > 0)
	rep.Diff = diff.String()
	if err := statedir.WriteFileAtomic(filepath.Join(dir, DiffFile), []byte(rep.Diff)); err != nil {
		notes = append(notes, "the whole diff could not be saved: "+err.Error())
	}
	if rec.Full {
		notes = append(notes, holdWalk(ws, dir, rec, all, git, c.oldContent, &rep)...)
	}
	rep.Note = strings.Join(notes, "; ")
	return rep, nil
}

type comparer struct {
	ws, dir string
	rec     *Record
	tree    *sandbox.Tree // the workspace, for reads that follow no link
	git     Git
	full    bool // the report is full: read no more files
	late    bool // the comparison's time is up: read no more files
	// unverified counts the files of a full record taken for unchanged by
	// their size and mtime alone (no Sum, or out of time).
	unverified *int
}

// notRead notes a change listed without reading the file: the report was
// full, or (notReadLate) the comparison's time was up.
const (
	notRead     = "not read: the diff or the list reached its bound (its size, time or mode differ)"
	notReadLate = "not read: the comparison ran out of time (its size, time or mode differ)"
)

// unread says why no file is read any more ("" when they still are).
func (c comparer) unread() string {
	switch {
	case c.late:
		return notReadLate
	case c.full:
		return notRead
	}
	return ""
}

// denyNote marks a deny path of the job's policy in the list.
const denyNote = "a deny path of the job's policy: never read or shown"

// secret reports whether p's contents must never be read: a secret file by
// name at either end, or a deny path of the job.
func (c comparer) secret(p string, old Entry, had bool, cur sandbox.FileEntry, has bool) (secret, denied bool) {
	denied = c.rec.denied(p)
	return denied || had && old.Secret || has && cur.Secret, denied
}

// compare says whether path changed, how, and its diff ("" when none).
func (c comparer) compare(p string, old Entry, had bool, cur sandbox.FileEntry, has bool) (ch Change, diff string, changed bool) {
	var denied bool
	defer func() {
		if changed && denied {
			ch.Note = joinNote(ch.Note, denyNote)
		}
	}()
	switch {
	case had && has:
		if old.Size == cur.Size && old.Mode == cur.Mode {
			if old.Sum != "" && cur.Mode.IsRegular() && !c.late {
				if sum, err := hashFile(c.tree, p); err == nil && sum == old.Sum {
					return Change{}, "", false
				}
			} else if old.ModTime == cur.ModTime {
				if c.rec.Full && cur.Mode.IsRegular() && !c.rec.denied(p) {
					*c.unverified++
				}
				return Change{}, "", false
			}
		}
		ch = Change{Path: p, Change: Modified, Size: cur.Size}
		ch.Secret, denied = c.secret(p, old, had, cur, has)
		oldSize := old.Size
		ch.OldSize = &oldSize
		if old.Mode != cur.Mode {
			ch.Note = fmt.Sprintf("mode %s → %s", old.Mode, cur.Mode)
		}
		if ch.Secret {
			return ch, "", true
		}
		if !old.Mode.IsRegular() || !cur.Mode.IsRegular() {
			ch.Note = joinNote(ch.Note, "not a regular file: not diffed")
			return ch, "", true
		}
		if why := c.unread(); why != "" {
			ch.Note = joinNote(ch.Note, why)
			return ch, "", true
		}
		before, why := c.oldContent(old)
		after, err := readSmall(c.tree, p, MaxDiffFile)
		if why == "" && err == nil && bytes.Equal(before, after) && old.Mode == cur.Mode {
			return Change{}, "", false // touched, not changed
		}
		return c.diffed(ch, before, why, after, err)
	case had:
		ch = Change{Path: p, Change: Deleted, Size: old.Size}
		ch.Secret, denied = c.secret(p, old, had, cur, has)
		if ch.Secret || !old.Mode.IsRegular() {
			return ch, "", true
		}
		if why := c.unread(); why != "" {
			ch.Note = why
			return ch, "", true
		}
		before, why := c.oldContent(old)
		return c.diffed(ch, before, why, nil, nil)
	default:
		ch = Change{Path: p, Change: Created, Size: cur.Size}
		ch.Secret, denied = c.secret(p, old, had, cur, has)
		if ch.Secret {
			return ch, "", true
		}
		if !cur.Mode.IsRegular() {
			ch.Note = "not a regular file: not diffed"
			return ch, "", true
		}
		if why := c.unread(); why != "" {
			ch.Note = why
			return ch, "", true
		}
		after, err := readSmall(c.tree, p, MaxDiffFile)
		return c.diffed(ch, nil, "", after, err)
	}
}

// diffed fills in ch's binary flag or note and returns its diff.
func (c comparer) diffed(ch Change, before []byte, why string, after []byte, afterErr error) (Change, string, bool) {
	switch {
	case why == "binary" || (ch.Change != Deleted && afterErr == nil && !isText(after)):
		ch.Binary = true
		return ch, binaryDiff(ch), true
	case why != "":
		ch.Note = joinNote(ch.Note, "no diff: "+why)
		return ch, "", true
	case afterErr != nil && ch.Change != Deleted:
		ch.Note = joinNote(ch.Note, "no diff: "+readWhy(afterErr))
		return ch, "", true
	}
	return ch, unified(ch, string(before), string(after)), true
}

// oldContent is the file's contents at the start, or why they are not known.
func (c comparer) oldContent(e Entry) ([]byte, string) {
	switch {
	case e.Binary:
		return nil, "binary"
	case e.Copy != "":
		b, err := readCopy(filepath.Join(c.dir, packFile), e)
		if err != nil {
			return nil, "its copy from the start is gone (" + err.Error() + ")"
		}
		return b, ""
	case e.Blob != "":
		b, err := blob(c.git, c.ws, e.Blob, MaxDiffFile)
		if err != nil {
			return nil, "its contents at the start could not be read from git (" + err.Error() + ")"
		}
		if !isText(b) {
			return nil, "binary"
		}
		return b, ""
	case e.Size > MaxCopyFile:
		return nil, fmt.Sprintf("it was over %d KiB at the start, so no copy was kept", MaxCopyFile>>10)
	default:
		return nil, "no copy of it was kept at the start"
	}
}

func readWhy(err error) string {
	if errors.Is(err, errTooLarge) {
		return fmt.Sprintf("over %d MiB", MaxDiffFile>>20)
	}
	if errors.Is(err, os.ErrNotExist) {
		return "it is gone"
	}
	return err.Error()
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

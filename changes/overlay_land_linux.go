package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// land puts each change that want selects into the workspace: a file
// written atomically (a temporary file renamed over the old one), a
// deletion unlinked, an empty dir made. A workspace file whose ctime is not
// before started was changed by someone else during the job: nothing of it
// lands (StatusConflict) unless force. A landed change leaves the upper
// dir, which then holds only what has not landed.
func (rd *reader) land(chs []change, started time.Time, want func(change) bool, force bool) {
	// Files first, in path order; then deleted dirs, deepest first.
	var dirs []int
	for i := range chs {
		c := &chs[i]
		if !want(*c) {
			continue
		}
		if c.Change.Change == Deleted && c.kind == "dir" {
			dirs = append(dirs, i)
			continue
		}
		if !force && rd.changedSince(c.Path, started) {
			c.Status = StatusConflict
			c.Note = joinNote(c.Note, "changed in the workspace during the job: the job's version did not land (it stays in the job's upper dir)")
			continue
		}
		if err := rd.apply(c); err != nil {
			c.Status = StatusFailed
			c.Note = joinNote(c.Note, "could not be written to the workspace: "+err.Error())
			continue
		}
		c.Status = StatusLanded
		if force {
			c.Status = StatusPromoted
		}
		rd.dropUpper(c.Path)
	}
	slices.SortFunc(dirs, func(a, b int) int { return strings.Compare(chs[b].Path, chs[a].Path) })
	for _, i := range dirs {
		c := &chs[i]
		if err := rd.lower.Remove(c.Path); err != nil {
			c.Status = StatusConflict
			c.Note = joinNote(c.Note, "not removed: it is not empty in the workspace ("+err.Error()+")")
			continue
		}
		c.Status = StatusLanded
		if force {
			c.Status = StatusPromoted
		}
		rd.dropUpper(c.Path)
	}
	rd.pruneUpper(chs)
}

// changedSince reports whether the workspace's entry at rel (if any) has a
// ctime not before t: written, renamed, chmodded or linked since.
func (rd *reader) changedSince(rel string, t time.Time) bool {
	st, err := rd.lower.Lstat(rel)
	if err != nil {
		return false
	}
	ct := time.Unix(st.Ctim.Unix())
	return !ct.Before(t)
}

// apply writes one change into the workspace.
func (rd *reader) apply(c *change) error {
	switch {
	case c.Change.Change == Deleted:
		return rd.lower.Remove(c.Path)
	case c.kind == "dir":
		if err := rd.lower.MkdirAll(c.Path, os.FileMode(c.mode).Perm()); err != nil {
			return err
		}
		return rd.lower.Chmod(c.Path, os.FileMode(c.mode).Perm())
	case c.kind == "link":
		target, err := os.Readlink(filepath.Join(rd.upper, filepath.FromSlash(c.Path)))
		if err != nil {
			return err
		}
		return rd.lower.Symlink(target, c.Path)
	case c.kind == "file":
		f, err := rd.up.Open(c.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		if c.sum != "" {
			// What lands is what the record showed: the job's version as
			// it was at its end, not what something wrote there since.
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
			if hex.EncodeToString(h.Sum(nil)) != c.sum {
				return errors.New("it changed in the job's upper dir since the record was made: not what the diff showed")
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		return rd.lower.WriteFile(c.Path, f, os.FileMode(c.mode).Perm())
	}
	return fmt.Errorf("a %s is never put in a workspace", kindName(c.kind))
}

// dropUpper removes rel from the upper dir (a landed change).
func (rd *reader) dropUpper(rel string) {
	_ = rd.up.Remove(rel) // a dir only when empty: what is in it has its own change; never through a link
}

// pruneUpper removes the upper dir's empty dirs but those of chs that
// still wait (an empty dir the job made that is held), so that the upper
// dir holds only what has not landed.
func (rd *reader) pruneUpper(chs []change) {
	keep := map[string]bool{}
	for _, c := range chs {
		if waiting(c.Change) {
			keep[c.Path] = true
		}
	}
	var dirs []string
	_ = filepath.WalkDir(rd.upper, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != rd.upper {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		if keep[filepath.ToSlash(strings.TrimPrefix(d, rd.upper+"/"))] {
			continue
		}
		_ = os.Remove(d) // only when empty
	}
}

// The owner's decisions on an ended overlay job (bridgectl jobs ID
// --apply, --promote, --discard). Each rereads the record and the upper dir,
// acts, and saves the record with the new statuses.

// Apply lands the changes of a review job that wait (StatusPending), with
// the same conflict check as at a job's end.
func Apply(ws, dir string) (*OverlayRecord, error) {
	return settle(ws, dir, nil, func(c Change) bool { return c.Status == StatusPending }, "land", false)
}

// Promote puts the held (or conflicting, or failed) changes at or below
// paths into the workspace, as the owner asked: no conflict check.
func Promote(ws, dir string, paths []string) (*OverlayRecord, error) {
	if len(paths) == 0 {
		return nil, errors.New("name the paths to promote")
	}
	return settle(ws, dir, paths, waiting, "promote", true)
}

// Discard drops the changes at or below paths (every one that waits when
// paths is empty) from the job's upper dir.
func Discard(ws, dir string, paths []string) (*OverlayRecord, error) {
	return settle(ws, dir, paths, waiting, "discard", false)
}

func waiting(c Change) bool {
	switch c.Status {
	case StatusPending, StatusHeld, StatusConflict, StatusFailed:
		return true
	}
	return false
}

func settle(ws, dir string, paths []string, want func(Change) bool, op string, force bool) (*OverlayRecord, error) {
	rec, err := LoadOverlayRecord(dir)
	if err != nil {
		return nil, fmt.Errorf("the job's record: %w", err)
	}
	if rec.CarriedTo != "" {
		return nil, fmt.Errorf("the changes this job did not land were carried into job %s, which continued it: decide there", rec.CarriedTo)
	}
	st, err := LoadOverlayStart(dir)
	if err != nil {
		return nil, fmt.Errorf("the overlay's start record: %w", err)
	}
	rels, err := relPaths(ws, paths)
	if err != nil {
		return nil, err
	}
	matched := make([]bool, len(rels))
	sel := map[int]bool{}
	for i, c := range rec.Changes {
		if !want(c) {
			continue
		}
		for j, r := range rels {
			if c.Path == r || strings.HasPrefix(c.Path, r+"/") {
				sel[i], matched[j] = true, true
			}
		}
		if len(rels) == 0 {
			sel[i] = true
		}
	}
	for j, ok := range matched {
		if !ok {
			return nil, fmt.Errorf("%s: %w (see `bridgectl jobs ID --changes`)", rels[j], ErrNotHeld)
		}
	}
	rd, err := openReader(ws, dir, st)
	if err != nil {
		return nil, err
	}
	defer rd.close()
	var chs []change
	var idx []int
	for i := range rec.Changes {
		if !sel[i] {
			continue
		}
		c := change{Change: rec.Changes[i], kind: rec.Changes[i].Kind, oldMode: -1, sum: rec.Sums[rec.Changes[i].Path]}
		if c.kind == "" && c.Change.Change != Deleted {
			c.kind = "file"
		}
		if fi, err := os.Lstat(filepath.Join(rd.upper, filepath.FromSlash(c.Path))); err == nil {
			c.mode = int(fi.Mode().Perm())
		}
		chs = append(chs, c)
		idx = append(idx, i)
	}
	if op == "discard" {
		for i := len(chs) - 1; i >= 0; i-- { // what a dir holds before the dir
			_ = rd.up.Remove(chs[i].Path) // never through a link
			chs[i].Status = StatusDiscarded
		}
		rd.pruneUpper(chs)
	} else {
		rd.land(chs, st.Started, func(change) bool { return true }, force)
	}
	for k, i := range idx {
		rec.Changes[i] = chs[k].Change
	}
	if err := rec.save(dir); err != nil {
		return nil, fmt.Errorf("save the record: %w", err)
	}
	return rec, nil
}

// relPaths makes each path relative to ws (slash-separated, clean).
func relPaths(ws string, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(ws, p)
			if err != nil || strings.HasPrefix(r, "..") {
				return nil, fmt.Errorf("%s is not inside the job's workspace %s", p, ws)
			}
			p = r
		}
		p = path.Clean(filepath.ToSlash(p))
		if p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return nil, fmt.Errorf("%q is not a path inside the job's workspace", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Carry moves what the job whose changes dir is parentDir did not land into
// childDir's upper dir, for the job that continues it: the new job sees
// those changes, and its record lists them again. The parent's record says
// where they went. carried is false when there was nothing to carry.
func Carry(parentDir, childDir, childID string) (carried bool, started time.Time, err error) {
	rec, err := LoadOverlayRecord(parentDir)
	if err != nil || rec.Unlanded() == 0 || rec.CarriedTo != "" {
		return false, time.Time{}, nil
	}
	st, err := LoadOverlayStart(parentDir)
	if err != nil {
		return false, time.Time{}, err
	}
	if err := os.MkdirAll(childDir, 0o700); err != nil {
		return false, time.Time{}, err
	}
	from, to := OverlayOf(parentDir, st.Workspace).Upper, OverlayOf(childDir, st.Workspace).Upper
	if err := os.Rename(from, to); err != nil {
		return false, time.Time{}, fmt.Errorf("carry the parent's changes: %w", err)
	}
	rec.CarriedTo = childID
	for i := range rec.Changes {
		if waiting(rec.Changes[i]) {
			rec.Changes[i].Status = StatusCarried
		}
	}
	rec.Note = joinNote(rec.Note, "what did not land was carried into job "+childID+", which continued this one")
	return true, st.Started, rec.save(parentDir)
}

package changes

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// holdWalk holds back, for a job that wrote straight into its workspace (no
// overlay could be had), the changes a person does not read in a diff, as
// an overlay job's end does (holdReason, git's ignore rules, the hooks):
// the job's version of a held file moves into the changes dir's upper dir,
// out of the workspace, and a modified one gets its contents from the start
// back (old reads them). What cannot be held — a deletion, a link or dir,
// a modified file whose earlier contents were not kept — stays, and its
// note says so. It saves record.json, and overlay.json so that bridgectl's
// --promote and --discard work as for an overlay job, sets rep's statuses
// and counts, and returns its notes.
func holdWalk(ws, dir string, rec *Record, all []Change, git Git, old func(Entry) ([]byte, string), rep *Report) []string {
	st := OverlayStart{Version: 1, Workspace: ws, Started: rec.Taken, Land: LandAuto, DenyPaths: rec.DenyPaths}
	if err := os.MkdirAll(OverlayOf(dir, ws).Upper, 0o700); err != nil {
		return []string{"nothing could be held back: " + err.Error()}
	}
	rd, err := openReader(ws, dir, st)
	if err != nil {
		return []string{"nothing could be held back: " + err.Error()}
	}
	defer rd.close()
	rd.cur = rd.lower
	chs := make([]change, len(all))
	for i, c := range all {
		ch := change{Change: c, oldMode: -1}
		if e, ok := rec.Files[c.Path]; ok {
			ch.oldMode = int(e.Mode.Perm())
		}
		if c.Change != Deleted {
			if lst, err := rd.lower.Lstat(c.Path); err == nil {
				ch.kind, ch.mode = kindOf(lst.Mode), int(lst.Mode&0o7777)
			}
		}
		chs[i] = ch
	}
	secret := make([]bool, len(chs))
	for i := range chs {
		secret[i] = chs[i].Secret
	}
	rd.hold(chs, git)
	var notes []string
	held := 0
	for i := range chs {
		c := &chs[i]
		c.Secret = secret[i] || c.Secret
		c.Status = StatusLanded
		if c.Held == "" || strings.Contains(path.Base(c.Path), ".quarantined-") {
			c.Held = ""
			continue
		}
		if why := rd.holdOne(c, rec, old); why != "" {
			c.Note = joinNote(c.Note, "not held back ("+why+"): it is in the workspace")
			continue
		}
		c.Status = StatusHeld
		held++
	}
	if held > 0 {
		notes = append(notes, fmt.Sprintf("%d changes are held back (moved out of the workspace into the job's changes dir): see each one's held reason, then `bridgectl jobs ID --promote PATH...` or `--discard`", held))
	}
	r := &OverlayRecord{Version: 1, Workspace: ws, Started: rec.Taken, Ended: time.Now(), Land: LandAuto, Walk: true}
	for i, c := range chs {
		if c.kind != "file" && c.kind != "" {
			c.Kind = c.kind
		}
		all[i] = c.Change
		r.Changes = append(r.Changes, c.Change)
	}
	// The report's own note says where every change is when it lists fewer.
	full := r.report(dir, rep.Diff)
	rep.Changes, rep.Held, rep.Record, rep.Unlisted = full.Changes, full.Held, full.Record, full.Unlisted
	if full.Note != "" {
		notes = append(notes, full.Note)
	}
	if rep.Incomplete {
		r.Note, r.Incomplete = "the record is incomplete: see the job's changes_note", true
	}
	if err := writeJSONFile(filepath.Join(dir, OverlayStartFile), st); err != nil {
		return append(notes, "the record of held changes could not be saved: "+err.Error())
	}
	if err := r.save(dir); err != nil {
		return append(notes, "the record of held changes could not be saved: "+err.Error())
	}
	return notes
}

// holdOne moves the job's version of the held change c out of the
// workspace into the upper dir (and puts a modified file's earlier contents
// back), or says why it cannot.
func (rd *reader) holdOne(c *change, rec *Record, old func(Entry) ([]byte, string)) string {
	switch {
	case c.Held == HeldDenyPath || rec.denied(c.Path):
		return "a deny path is never read or moved"
	case c.Change.Change == Deleted:
		return "a deletion cannot be held without an overlay"
	case c.kind != "file":
		return "a " + kindName(c.kind) + " is not moved"
	}
	var before []byte
	if c.Change.Change == Modified {
		e, ok := rec.Files[c.Path]
		if !ok || e.Secret {
			return "its earlier contents were never read"
		}
		var why string
		if before, why = old(e); why != "" && why != "binary" {
			return "its earlier contents are not known: " + why
		}
		if why == "binary" {
			return "its earlier contents were binary and not kept"
		}
	}
	if err := rd.keepInUpper(c.Path, os.FileMode(c.mode).Perm()); err != nil {
		return "it could not be kept: " + err.Error()
	}
	var err error
	if c.Change.Change == Modified {
		err = rd.lower.WriteFile(c.Path, bytes.NewReader(before), os.FileMode(c.oldMode).Perm())
		c.Note = joinNote(c.Note, "its contents from the job's start are back in the workspace")
	} else {
		err = rd.lower.Remove(c.Path)
	}
	if err != nil {
		_ = os.Remove(filepath.Join(rd.upper, filepath.FromSlash(c.Path)))
		return "it could not be moved: " + err.Error()
	}
	return ""
}

// keepInUpper copies the workspace's file rel (read without following a
// link) to the same path in the upper dir.
func (rd *reader) keepInUpper(rel string, perm os.FileMode) error {
	src, err := rd.lower.Open(rel)
	if err != nil {
		return err
	}
	defer src.Close()
	dst := filepath.Join(rd.upper, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

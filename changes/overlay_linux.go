package changes

import (
	"bytes"
	"context"
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

	"golang.org/x/sys/unix"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// The xattrs overlayfs keeps in an upper dir mounted with userxattr.
const (
	xattrOpaque   = "user.overlay.opaque"
	xattrMetacopy = "user.overlay.metacopy"
	xattrRedirect = "user.overlay.redirect"
)

// upperItem is one entry of an upper dir.
type upperItem struct {
	rel      string
	kind     string // "file", "dir", "link", "special", "whiteout"
	opaque   bool   // a dir that hides the lower dir's contents
	metacopy bool   // a file whose data is still the lower's
	redirect bool
	mode     int
	size     int64
}

// walkUpper lists every entry of the upper dir, parents before children,
// in path order. It follows no link.
func walkUpper(upper string) ([]upperItem, error) {
	var out []upperItem
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(upper, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			r := path.Join(rel, e.Name())
			p := filepath.Join(upper, filepath.FromSlash(r))
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			it := upperItem{rel: r, mode: int(st.Mode & 0o7777), size: st.Size}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFCHR:
				if st.Rdev == 0 {
					it.kind = "whiteout"
				} else {
					it.kind = "special"
				}
			case unix.S_IFDIR:
				it.kind = "dir"
				it.opaque = xattr(p, xattrOpaque) == "y"
				it.redirect = xattr(p, xattrRedirect) != ""
			case unix.S_IFREG:
				it.kind = "file"
				it.metacopy = hasXattr(p, xattrMetacopy)
			case unix.S_IFLNK:
				it.kind = "link"
			default:
				it.kind = "special"
			}
			out = append(out, it)
			if it.kind == "dir" {
				if err := walk(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b upperItem) int { return strings.Compare(a.rel, b.rel) })
	return out, nil
}

func xattr(p, name string) string {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(p, name, buf)
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

func hasXattr(p, name string) bool {
	_, err := unix.Lgetxattr(p, name, nil)
	return err == nil || errors.Is(err, unix.ERANGE)
}

// change is a Change with what the record needs to land it.
type change struct {
	Change
	kind    string // of the new entry: "file", "dir", "link", "special" ("" for a deletion)
	mode    int
	oldMode int // -1: none at the start
}

// reader reads an overlay job's two sides: the workspace (the lower
// layer, as it is now) and the upper dir.
type reader struct {
	ws, upper string
	lower     *sandbox.Tree
	up        *sandbox.Tree
	deny      policy.Enforced
	venvs     map[string]bool
}

// FromOverlay records what the job whose changes dir is dir changed, from
// its upper dir, and (with land, in land mode auto) lands the visible
// changes in the workspace ws. A record already made is returned as it is:
// the job's end runs once, but a daemon that crashed after the record was
// written runs it again at its next start. ctx bounds nothing that would
// leave the record partial: a record is whole or not written.
func FromOverlay(_ context.Context, ws, dir string, git Git, land bool) (Report, error) {
	if r, err := LoadOverlayRecord(dir); err == nil {
		diff, _ := os.ReadFile(filepath.Join(dir, DiffFile))
		return r.report(dir, string(diff)), nil
	}
	st, err := LoadOverlayStart(dir)
	if err != nil {
		return Report{}, fmt.Errorf("the overlay's start record: %w", err)
	}
	rd, err := openReader(ws, dir, st)
	if err != nil {
		return Report{}, err
	}
	defer rd.close()
	items, err := walkUpper(rd.upper)
	if err != nil {
		return Report{}, fmt.Errorf("read the job's upper dir: %w", err)
	}
	chs, notes := rd.changes(items)
	rd.hold(chs, git)
	rec := &OverlayRecord{Version: 1, Workspace: ws, Started: st.Started, Ended: time.Now(), Land: st.Land}
	if st.CarriedFrom != "" {
		notes = append(notes, "this job began with the changes job "+st.CarriedFrom+" had not landed")
	}
	for i := range chs {
		c := &chs[i]
		switch {
		case c.Held == "":
			c.Status = StatusPending
		case c.kind == "dir" && c.Change.Change == Created:
			c.Status = StatusDropped // empty: what it holds would be a change of its own
		default:
			c.Status = StatusHeld
		}
	}
	diff := rd.diffs(chs) // before landing, which replaces the earlier contents
	if land && st.Land == LandAuto {
		rd.land(chs, st.Started, func(c change) bool { return c.Status == StatusPending }, false)
	}
	for _, c := range chs {
		if c.kind != "file" && c.kind != "" {
			c.Kind = c.kind
		}
		rec.Changes = append(rec.Changes, c.Change)
	}
	if n := countStatus(chs, StatusHeld); n > 0 {
		notes = append(notes, fmt.Sprintf("%d changes are held back (not in the workspace): see each one's held reason, then `bridgectl jobs ID --promote PATH...` or `--discard`", n))
	}
	if n := countStatus(chs, StatusConflict); n > 0 {
		notes = append(notes, fmt.Sprintf("%d files were changed by someone else during the job: the job's version of them did not land", n))
	}
	if n := countStatus(chs, StatusPending); n > 0 {
		notes = append(notes, fmt.Sprintf("%d changes wait for the owner (land: review): `bridgectl jobs ID --apply` or `--discard`", n))
	}
	rec.Note = strings.Join(notes, "; ")
	if err := writeFileAtomic(filepath.Join(dir, DiffFile), []byte(diff)); err != nil {
		return Report{}, fmt.Errorf("save the diff: %w", err)
	}
	if err := rec.save(dir); err != nil {
		return Report{}, fmt.Errorf("save the record: %w", err)
	}
	return rec.report(dir, diff), nil
}

func countStatus(chs []change, s string) int {
	n := 0
	for _, c := range chs {
		if c.Status == s {
			n++
		}
	}
	return n
}

func openReader(ws, dir string, st OverlayStart) (*reader, error) {
	lower, err := sandbox.OpenTree(ws)
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	upper := OverlayOf(dir, ws).Upper
	up, err := sandbox.OpenTree(upper)
	if err != nil {
		lower.Close()
		return nil, fmt.Errorf("open the job's upper dir: %w", err)
	}
	return &reader{ws: ws, upper: upper, lower: lower, up: up,
		deny: policy.Enforced{Policy: policy.Policy{DenyPaths: st.DenyPaths}}, venvs: map[string]bool{}}, nil
}

func (rd *reader) close() {
	rd.lower.Close()
	rd.up.Close()
}

// changes turns the upper dir's entries into changes: a file compared by
// content with the workspace's, a whiteout into the deletion of what the
// workspace holds there (every file of a deleted dir), an opaque dir into
// the deletion of the workspace dir's other contents.
func (rd *reader) changes(items []upperItem) ([]change, []string) {
	var out []change
	var notes []string
	inUpper := make(map[string]bool, len(items))
	for _, it := range items {
		inUpper[it.rel] = true
	}
	for _, it := range items {
		lst, lerr := rd.lower.Lstat(it.rel)
		had := lerr == nil
		oldMode := -1
		var oldKind string
		if had {
			oldMode = int(lst.Mode & 0o7777)
			oldKind = kindOf(lst.Mode)
		}
		switch it.kind {
		case "whiteout":
			if !had {
				continue
			}
			out = append(out, rd.deleted(it.rel, lst, oldKind)...)
		case "dir":
			if it.redirect {
				notes = append(notes, it.rel+" carries a rename overlayfs recorded as a redirect: listed as its files")
			}
			if had && oldKind != "dir" {
				out = append(out, rd.deleted(it.rel, lst, oldKind)...)
				had = false
			}
			if !had {
				if !rd.hasChildren(it.rel, items) {
					out = append(out, change{Change: Change{Path: it.rel, Change: Created, Note: "a new empty directory"}, kind: "dir", mode: it.mode, oldMode: -1})
				}
				continue
			}
			if it.opaque {
				for _, d := range rd.lowerFiles(it.rel) {
					if !inUpper[d.rel] {
						out = append(out, d.deletion())
					}
				}
			}
			if it.mode != oldMode {
				out = append(out, change{Change: Change{Path: it.rel, Change: Modified, Note: fmt.Sprintf("directory mode %04o → %04o", oldMode, it.mode)}, kind: "dir", mode: it.mode, oldMode: oldMode})
			}
		default:
			c := change{Change: Change{Path: it.rel, Change: Created, Size: it.size}, kind: it.kind, mode: it.mode, oldMode: -1}
			if had && oldKind == "dir" {
				out = append(out, rd.deleted(it.rel, lst, oldKind)...)
				had = false
			}
			if had {
				c.Change.Change = Modified
				c.oldMode = oldMode
				old := lst.Size
				c.OldSize = &old
				if it.kind == "file" && oldKind == "file" && (it.metacopy || rd.sameContent(it.rel)) {
					if it.mode == oldMode {
						continue // opened for writing, written back the same
					}
					c.Note = fmt.Sprintf("mode %04o → %04o, contents unchanged", oldMode, it.mode)
				} else if oldKind != it.kind {
					c.Note = "was a " + kindName(oldKind) + ", now a " + kindName(it.kind)
				}
			}
			if it.kind == "link" {
				target, _ := os.Readlink(filepath.Join(rd.upper, filepath.FromSlash(it.rel)))
				c.Note = joinNote(c.Note, "a link to "+target)
			}
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b change) int { return strings.Compare(a.Path, b.Path) })
	return out, notes
}

func kindOf(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "link"
	}
	return "special"
}

func kindName(k string) string {
	switch k {
	case "file":
		return "file"
	case "dir":
		return "directory"
	case "link":
		return "symbolic link"
	}
	return "special file"
}

func (rd *reader) hasChildren(rel string, items []upperItem) bool {
	i, _ := slices.BinarySearchFunc(items, rel+"/", func(a upperItem, t string) int { return strings.Compare(a.rel, t) })
	return i < len(items) && strings.HasPrefix(items[i].rel, rel+"/")
}

// deleted are the deletions a whiteout at rel stands for: the file, or
// every file below the dir.
func (rd *reader) deleted(rel string, lst *unix.Stat_t, kind string) []change {
	if kind != "dir" {
		return []change{{Change: Change{Path: rel, Change: Deleted, Size: lst.Size}, oldMode: int(lst.Mode & 0o7777)}}
	}
	var out []change
	for _, f := range rd.lowerFiles(rel) {
		out = append(out, f.deletion())
	}
	out = append(out, change{Change: Change{Path: rel, Change: Deleted, Note: "a directory"}, oldMode: int(lst.Mode & 0o7777), kind: "dir"})
	return out
}

type lowerFile struct {
	rel  string
	size int64
	mode int // -2: a dir
}

func (f lowerFile) deletion() change {
	if f.mode == -2 {
		return change{Change: Change{Path: f.rel, Change: Deleted, Note: "a directory"}, kind: "dir", oldMode: 0o755}
	}
	return change{Change: Change{Path: f.rel, Change: Deleted, Size: f.size}, oldMode: f.mode}
}

// lowerFiles lists everything below the workspace dir rel (dirs after
// what they hold).
func (rd *reader) lowerFiles(rel string) []lowerFile {
	var out []lowerFile
	entries, err := rd.lower.ReadDir(rel, true)
	if err != nil {
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		r := path.Join(rel, e.Name())
		if e.IsDir() {
			out = append(out, rd.lowerFiles(r)...)
			out = append(out, lowerFile{rel: r, mode: -2})
			continue
		}
		var size int64
		mode := 0
		if info, err := e.Info(); err == nil {
			size, mode = info.Size(), int(info.Mode().Perm())
		}
		out = append(out, lowerFile{rel: r, size: size, mode: mode})
	}
	return out
}

// sameContent compares the upper and lower files at rel byte for byte.
func (rd *reader) sameContent(rel string) bool {
	a, err := rd.up.Open(rel)
	if err != nil {
		return false
	}
	defer a.Close()
	b, err := rd.lower.Open(rel)
	if err != nil {
		return false
	}
	defer b.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF)
		}
	}
}

// hold sets each change's Held reason (holdReason, then git's ignore
// rules for what is still visible) and its Secret flag.
func (rd *reader) hold(chs []change, git Git) {
	hooks := rd.hookPaths(git)
	var ask []string
	for i := range chs {
		c := &chs[i]
		_, deny := rd.deny.Denied(rd.ws, filepath.Join(rd.ws, filepath.FromSlash(c.Path)))
		f := entryFacts{Path: c.Path, Kind: c.kind, Deleted: c.Change.Change == Deleted, NewMode: c.mode, OldMode: c.oldMode,
			InVenv: rd.inVenv(path.Dir(c.Path)), Deny: deny}
		if c.kind == "file" {
			f.Head = rd.head(c.Path)
			if !readable(f.Head) {
				c.Binary = true
			}
		}
		c.Secret = deny || c.Change.Change != Created && sandbox.IsSecretName(path.Base(c.Path))
		c.Held = holdReason(f)
		if c.Held == "" && underAny(c.Path, hooks) {
			c.Held = HeldHook
		}
		if c.Held == "" && rd.inGitDirShape(c.Path) {
			c.Held = HeldGitShape
		}
		if c.Held == "" {
			ask = append(ask, c.Path)
		}
	}
	ign, err := git.ignored(rd.ws, ask)
	if err != nil {
		// Unknown is held: an ignored file would land unseen.
		for i := range chs {
			if chs[i].Held == "" {
				chs[i].Held = HeldIgnored + " (git could not be asked: " + err.Error() + ")"
			}
		}
		return
	}
	for i := range chs {
		if chs[i].Held == "" && ign[chs[i].Path] {
			chs[i].Held = HeldIgnored
		}
	}
}

// hookPaths are the workspace paths git runs as hooks of the workspace's
// repository: the files its .git/hooks links lead to, and its
// core.hooksPath when that is inside the workspace.
func (rd *reader) hookPaths(git Git) []string {
	var out []string
	inside := func(p string) {
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(rd.ws, p)
			if err != nil {
				return
			}
			p = r
		}
		if p = path.Clean(filepath.ToSlash(p)); p != "." && p != ".." && !strings.HasPrefix(p, "../") {
			out = append(out, p)
		}
	}
	if entries, err := rd.lower.ReadDir(".git/hooks", true); err == nil {
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := os.Readlink(filepath.Join(rd.ws, ".git", "hooks", e.Name()))
			if err != nil {
				continue
			}
			if !filepath.IsAbs(target) {
				target = path.Join(".git/hooks", filepath.ToSlash(target))
			}
			inside(target)
		}
	}
	if st, err := rd.lower.Lstat(".git"); err == nil && kindOf(st.Mode) == "dir" {
		if b, err := git.run(rd.ws, "config", "--get", "core.hooksPath"); err == nil {
			if hp := strings.TrimSpace(string(b)); hp != "" {
				inside(hp)
			}
		}
	}
	return out
}

// underAny reports whether rel is one of dirs or below one.
func underAny(rel string, dirs []string) bool {
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// gitDirNames are the entries of a git dir: in a folder that holds a HEAD,
// git takes them for a repository (a bare one, whose config it obeys).
var gitDirNames = map[string]bool{
	"HEAD": true, "config": true, "objects": true, "refs": true, "hooks": true, "info": true,
	"commondir": true, "gitdir": true, "packed-refs": true, "index": true, "worktrees": true,
	"modules": true, "logs": true, "FETCH_HEAD": true, "ORIG_HEAD": true, "config.worktree": true,
}

// inGitDirShape reports whether rel is an entry of a git dir's shape: a
// gitDirNames entry of a folder (the workspace's top too) that holds a
// HEAD, in the workspace or in the upper dir.
func (rd *reader) inGitDirShape(rel string) bool {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if !gitDirNames[p] {
			continue
		}
		head := path.Join(path.Join(parts[:i]...), "HEAD")
		if _, err := rd.lower.Lstat(head); err == nil {
			return true
		}
		if _, err := os.Lstat(filepath.Join(rd.upper, filepath.FromSlash(head))); err == nil {
			return true
		}
	}
	return false
}

// inVenv reports whether the dir rel, or one above it, holds a pyvenv.cfg
// in the workspace or in the upper dir.
func (rd *reader) inVenv(rel string) bool {
	if rel == "." || rel == "" {
		return false
	}
	if v, ok := rd.venvs[rel]; ok {
		return v
	}
	cfg := path.Join(rel, "pyvenv.cfg")
	_, e1 := rd.lower.Lstat(cfg)
	_, e2 := os.Lstat(filepath.Join(rd.upper, filepath.FromSlash(cfg)))
	v := e1 == nil || e2 == nil || rd.inVenv(path.Dir(rel))
	rd.venvs[rel] = v
	return v
}

func (rd *reader) head(rel string) []byte {
	f, err := rd.up.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// diffs is the unified diff of every change, the visible ones first. A
// deny path is never read; a secret file that existed before shows only
// what the job wrote, never its earlier contents.
func (rd *reader) diffs(chs []change) string {
	var vis, held strings.Builder
	for i := range chs {
		c := &chs[i]
		d := rd.diff(c)
		if c.Held != "" {
			held.WriteString(d)
		} else {
			vis.WriteString(d)
		}
	}
	return vis.String() + held.String()
}

func (rd *reader) diff(c *change) string {
	if c.kind == "dir" || c.kind == "link" || c.kind == "special" {
		return ""
	}
	_, deny := rd.deny.Denied(rd.ws, filepath.Join(rd.ws, filepath.FromSlash(c.Path)))
	if deny {
		c.Note = joinNote(c.Note, denyNote)
		return ""
	}
	var before, after []byte
	var err error
	if c.Change.Change != Created {
		if c.Secret {
			c.Note = joinNote(c.Note, "a secret file: its earlier contents are not shown, only what the job wrote")
		} else if before, err = readSmall(rd.lower, c.Path, MaxDiffFile); err != nil {
			c.Note = joinNote(c.Note, "no diff: the earlier contents could not be read ("+err.Error()+")")
			return ""
		}
	}
	if c.Change.Change != Deleted {
		if after, err = readSmall(rd.up, c.Path, MaxDiffFile); err != nil {
			c.Note = joinNote(c.Note, "no diff: "+err.Error())
			return ""
		}
	}
	if c.Binary || !readable(before[:min(len(before), sniffBytes)]) {
		return binaryDiff(c.Change)
	}
	shown := c.Change
	if c.Secret && shown.Change == Modified {
		shown.Change = Created
	}
	return unified(shown, string(before), string(after))
}

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
		return rd.lower.MkdirAll(c.Path, os.FileMode(c.mode).Perm())
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
		return rd.lower.WriteFile(c.Path, f, os.FileMode(c.mode).Perm())
	}
	return fmt.Errorf("a %s is never put in a workspace", kindName(c.kind))
}

// dropUpper removes rel from the upper dir (a landed change).
func (rd *reader) dropUpper(rel string) {
	p := filepath.Join(rd.upper, filepath.FromSlash(rel))
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		_ = os.Remove(p) // only when empty: what is in it has its own change
		return
	}
	_ = os.Remove(p)
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

func writeFileAtomic(p string, b []byte) error { return statedir.WriteFileAtomic(p, b) }

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
		c := change{Change: rec.Changes[i], kind: rec.Changes[i].Kind, oldMode: -1}
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
			_ = os.Remove(filepath.Join(rd.upper, filepath.FromSlash(chs[i].Path)))
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

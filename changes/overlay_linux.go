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
	err      string // why an "unreadable" entry could not be read
}

// walkUpper lists every entry of the upper dir, parents before children,
// in path order. It follows no link.
func walkUpper(upper string) ([]upperItem, error) {
	var out []upperItem
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(upper, filepath.FromSlash(rel)))
		if err != nil {
			if rel == "" {
				return err
			}
			// A dir the daemon cannot list (too deep for a path, no
			// permission) is held whole, unlisted: the record says so.
			out = append(out, upperItem{rel: rel, kind: "unreadable", err: err.Error()})
			return nil
		}
		for _, e := range entries {
			r := path.Join(rel, e.Name())
			p := filepath.Join(upper, filepath.FromSlash(r))
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				out = append(out, upperItem{rel: r, kind: "unreadable", err: err.Error()})
				continue
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
	// nodiff says why the diff does not show this file ("": it does).
	nodiff string
	// sum is the sha256 of the job's version of a file, checked when it
	// lands.
	sum string
}

// reader reads an overlay job's two sides: the workspace (the lower
// layer, as it is now) and the upper dir.
type reader struct {
	ws, upper string
	lower     *sandbox.Tree
	up        *sandbox.Tree
	// cur is where the job's versions are: up for an overlay job, lower
	// for one that wrote straight into its workspace (holdWalk).
	cur   *sandbox.Tree
	deny  policy.Enforced
	venvs map[string]bool
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
	rd.sums(chs)
	diff := rd.diffs(items, chs) // before landing, which replaces the earlier contents; holds what it cannot show
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
	if land && st.Land == LandAuto {
		rd.land(chs, st.Started, func(c change) bool { return c.Status == StatusPending }, false)
	}
	rec.Sums = map[string]string{}
	for _, c := range chs {
		if c.sum != "" {
			rec.Sums[c.Path] = c.sum
		}
		if c.kind == "unreadable" {
			rec.Incomplete = true
		}
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
	if err := statedir.WriteFileAtomic(filepath.Join(dir, DiffFile), []byte(diff)); err != nil {
		return Report{}, fmt.Errorf("save the diff: %w", err)
	}
	if err := rec.save(dir); err != nil {
		return Report{}, fmt.Errorf("save the record: %w", err)
	}
	return rec.report(dir, diff), nil
}

// sums sets the sum of every file change's job version; one that cannot
// be read is held (HeldUnreadable).
func (rd *reader) sums(chs []change) {
	for i := range chs {
		c := &chs[i]
		if c.kind != "file" || c.Change.Change == Deleted {
			continue
		}
		sum, err := hashFile(rd.up, c.Path)
		if err != nil {
			if c.Held == "" {
				c.Held = HeldUnreadable
			}
			c.Note = joinNote(c.Note, "could not be read: "+err.Error())
			continue
		}
		c.sum = sum
	}
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
	return &reader{ws: ws, upper: upper, lower: lower, up: up, cur: up,
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
		case "unreadable":
			ch := Created
			if had {
				ch = Modified
			}
			out = append(out, change{Change: Change{Path: it.rel, Change: ch, Note: "could not be read in the job's upper dir (" + it.err + "): nothing in it is listed or landed"}, kind: "unreadable", oldMode: oldMode})
			continue
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

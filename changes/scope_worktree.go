package changes

// A review's scope of uncommitted work, diffed here in Go (see scope.go).

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// uncommitted: the work tree against HEAD, diffed here (see the package's
// note on scopes). The walk enters every directory (vendor/ and
// node_modules/ too: a committed vendor/ is part of the work tree), but no
// .git dir.
func (sc *scoper) uncommitted() error {
	head, err := sc.top()
	if err != nil {
		return err
	}
	sc.scope.From = head
	scan, err := sandbox.WorkspaceRecordScan(sc.ws, 0)
	if err != nil {
		return fmt.Errorf("scope: list the workspace: %w", err)
	}
	if scan.Truncated {
		sc.scope.Note = fmt.Sprintf("the workspace has more entries than the walk lists (%d): files in %d directories it did not reach are not in the scope", scan.Visited, scan.Unlisted)
	}
	var files []sandbox.FileEntry
	for _, f := range scan.Files {
		if f.Mode.IsRegular() && !inGitDir(f.Path) {
			files = append(files, f)
		}
	}
	_, clean := gitStart(sc.git, sc.ws, files)
	committed := map[string]string{} // path → blob id at HEAD
	if head != "" {
		out, err := sc.git.runCapped(sc.ws, true, nil, maxRawOutput, "ls-tree", "-r", "-z", "--full-tree", head)
		if err != nil {
			return fmt.Errorf("scope: %w", err)
		}
		for _, e := range strings.Split(string(out), "\x00") {
			meta, p, ok := strings.Cut(e, "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 && f[1] == "blob" && strings.HasPrefix(f[0], "100") {
				committed[p] = f[2]
			}
		}
	}
	// What changed, in path order: the files whose contents differ from
	// their committed blob, those not committed and not ignored, and the
	// committed ones that are gone.
	type change struct {
		path, id string // id: the committed blob ("" for a created file)
		now      []byte // the file's contents (nil for a deleted one)
		nowWhy   string // why they were not read
		kind     string
	}
	var chs []change
	var created []string
	present := map[string]bool{}
	for _, f := range files {
		present[f.Path] = true
		id, tracked := committed[f.Path]
		switch {
		case tracked && clean[f.Path] == id: // the index says it is as committed
		case !tracked:
			created = append(created, f.Path)
		case sc.leaveOut(f.Path):
		default:
			now, why := sc.readFile(f)
			if why == "" && blobID(id, now) == id {
				continue // touched, not changed
			}
			chs = append(chs, change{path: f.Path, id: id, now: now, nowWhy: why, kind: Modified})
		}
	}
	ignored, err := sc.git.ignored(sc.ws, created)
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	byPath := map[string]sandbox.FileEntry{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	for _, p := range created {
		if ignored[p] || sc.leaveOut(p) {
			continue
		}
		now, why := sc.readFile(byPath[p])
		chs = append(chs, change{path: p, now: now, nowWhy: why, kind: Created})
	}
	if !scan.Truncated {
		for p, id := range committed {
			if !present[p] && !inGitDir(p) && !sc.leaveOut(p) {
				chs = append(chs, change{path: p, id: id, kind: Deleted})
			}
		}
	}
	slices.SortFunc(chs, func(a, b change) int { return strings.Compare(a.path, b.path) })
	var ids []string
	for _, c := range chs {
		if c.id != "" {
			ids = append(ids, c.id)
		}
	}
	blobs, why, err := sc.blobs(ids)
	if err != nil {
		return err
	}
	for _, c := range chs {
		ch := Change{Path: c.path, Change: c.kind}
		f := ScopeFile{Path: c.path, Change: c.kind, Lines: -1} // Lines -1: not read
		old, oldWhy := blobs[c.id], why[c.id]
		switch {
		case c.nowWhy != "" || oldWhy != "":
			sc.addDiff(header(ch) + "(not shown: " + joinNote(c.nowWhy, oldWhy) + ")\n")
			if c.nowWhy == "" && c.kind != Deleted {
				f = fileOf(c.path, c.kind, c.now)
			}
		case bytes.IndexByte(old, 0) >= 0 || bytes.IndexByte(c.now, 0) >= 0:
			f.Binary = true
			sc.addDiff(binaryDiff(ch))
		default:
			d := unified(ch, string(old), string(c.now))
			f = fileOf(c.path, c.kind, c.now)
			if c.kind == Deleted {
				f.Lines = 0
			}
			f.Hunks = hunksOf(d)
			sc.addDiff(d)
		}
		sc.scope.Files = append(sc.scope.Files, f)
	}
	return nil
}

// readFile reads a work-tree file for the scope, within MaxDiffFile and
// the scope's read budget; why says why it was not read.
func (sc *scoper) readFile(f sandbox.FileEntry) ([]byte, string) {
	if f.Size > MaxDiffFile {
		return nil, readWhy(errTooLarge)
	}
	if sc.read+f.Size > maxScopeRead {
		return nil, "the scope's read budget is spent"
	}
	b, err := readSmall(sc.tree, f.Path, MaxDiffFile)
	if err != nil {
		return nil, readWhy(err)
	}
	sc.read += int64(len(b))
	return b, ""
}

// inGitDir reports whether a workspace path lies in a .git dir (the
// repository's own, or a nested one's).
func inGitDir(rel string) bool {
	return rel == ".git" || strings.HasPrefix(rel, ".git/") || strings.Contains(rel, "/.git/")
}

// blobID is the git object id of contents b, in the hash of id's length.
func blobID(id string, b []byte) string {
	var h hash.Hash = sha1.New()
	if len(id) == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

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
// note on scopes).
func (sc *scoper) uncommitted() error {
	head, err := sc.top()
	if err != nil {
		return err
	}
	sc.scope.From = head
	scan, err := sandbox.WorkspaceScan(sc.ws, sandbox.DefaultSecretScanLimit, true)
	if err != nil {
		return fmt.Errorf("scope: list the workspace: %w", err)
	}
	if scan.Truncated {
		sc.scope.Note = fmt.Sprintf("the workspace has more entries than the walk lists (%d): files in %d directories it did not reach are not in the scope", scan.Visited, scan.Unlisted)
	}
	_, clean := gitStart(sc.git, sc.ws, scan.Files)
	committed := map[string]string{} // path → blob id at HEAD
	if head != "" {
		out, err := sc.git.run(sc.ws, "ls-tree", "-r", "-z", "--full-tree", head)
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
	var created []string
	present := map[string]bool{}
	var diffs []string
	for _, f := range scan.Files {
		if !f.Mode.IsRegular() {
			continue
		}
		present[f.Path] = true
		id, tracked := committed[f.Path]
		if tracked && clean[f.Path] == id {
			continue // the index says it is as committed
		}
		if !tracked {
			created = append(created, f.Path)
			continue
		}
		if sc.leaveOut(f.Path) {
			continue
		}
		if d, ok := sc.modified(f.Path, id); ok {
			diffs = append(diffs, d)
		}
	}
	ignored, err := sc.git.ignored(sc.ws, created)
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	for _, p := range created {
		if ignored[p] || sc.leaveOut(p) {
			continue
		}
		b, err := readSmall(sc.tree, p, MaxDiffFile)
		ch := Change{Path: p, Change: Created}
		f := fileOf(p, Created, b)
		switch {
		case err != nil:
			diffs = append(diffs, header(ch)+"(not shown: "+readWhy(err)+")\n")
			f.Binary = true
		case f.Binary:
			diffs = append(diffs, binaryDiff(ch))
		default:
			d := unified(ch, "", string(b))
			f.Hunks = hunksOf(d)
			diffs = append(diffs, d)
		}
		sc.scope.Files = append(sc.scope.Files, f)
	}
	if !scan.Truncated {
		for p, id := range committed {
			if present[p] || sc.leaveOut(p) {
				continue
			}
			ch := Change{Path: p, Change: Deleted}
			old, err := blob(sc.git, sc.ws, id, MaxDiffFile)
			switch {
			case err != nil:
				diffs = append(diffs, header(ch)+"(not shown: "+readWhy(err)+")\n")
			case bytes.IndexByte(old, 0) >= 0:
				diffs = append(diffs, binaryDiff(ch))
			default:
				diffs = append(diffs, unified(ch, string(old), ""))
			}
			sc.scope.Files = append(sc.scope.Files, ScopeFile{Path: p, Change: Deleted})
		}
	}
	slices.SortFunc(diffs, func(a, b string) int { return strings.Compare(headerPath(a), headerPath(b)) })
	sc.scope.Diff = strings.Join(diffs, "")
	return nil
}

// modified is the diff of a tracked file whose committed blob is id, if
// its contents differ (its file is added to the scope).
func (sc *scoper) modified(rel, id string) (string, bool) {
	ch := Change{Path: rel, Change: Modified}
	now, err := readSmall(sc.tree, rel, MaxDiffFile)
	if err != nil {
		sc.scope.Files = append(sc.scope.Files, ScopeFile{Path: rel, Change: Modified, Binary: true})
		return header(ch) + "(not shown: " + readWhy(err) + ")\n", true
	}
	if blobID(id, now) == id {
		return "", false // touched, not changed
	}
	f := fileOf(rel, Modified, now)
	old, err := blob(sc.git, sc.ws, id, MaxDiffFile)
	var d string
	switch {
	case err != nil:
		d = header(ch) + "(the committed version is not shown: " + readWhy(err) + ")\n"
	case f.Binary || bytes.IndexByte(old, 0) >= 0:
		f.Binary = true
		d = binaryDiff(ch)
	default:
		d = unified(ch, string(old), string(now))
		f.Hunks = hunksOf(d)
	}
	sc.scope.Files = append(sc.scope.Files, f)
	return d, true
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

// hunksOf are the new side's changed ranges of one file's diff.
func hunksOf(d string) []LineRange {
	secs := splitDiff(d)
	if len(secs) == 0 {
		return nil
	}
	return secs[0].hunks
}

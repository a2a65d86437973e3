package changes

// What git says of a review's scope, read without parsing its patch text: the
// files of a diff from `git diff --raw -z` (their names as bytes, never
// quoted), and their contents as blobs, checked against their ids; the
// unified diff is then made here (unified), as for uncommitted work.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// Bounds of what a scope reads and keeps.
const (
	// MaxScopeDiff bounds a scope's diff; files past it are listed
	// without theirs (the prompt takes less still).
	MaxScopeDiff = 256 << 10
	// maxScopeRead bounds the bytes of blobs and files one scope reads.
	maxScopeRead = 32 << 20
	// maxRawOutput bounds `git diff --raw` and `ls-tree` output.
	maxRawOutput = 64 << 20
)

// rawEntry is one file of `git diff --raw -z --no-renames`.
type rawEntry struct {
	oldMode, newMode, oldID, newID, status, path string
}

// parseRaw reads `git diff --raw -z`: ":<old mode> <new mode> <old id>
// <new id> <status>\0<path>\0" for each file.
func parseRaw(out []byte) []rawEntry {
	parts := strings.Split(string(out), "\x00")
	var entries []rawEntry
	for i := 0; i+1 < len(parts); i += 2 {
		f := strings.Fields(strings.TrimPrefix(parts[i], ":"))
		if len(f) != 5 {
			continue
		}
		entries = append(entries, rawEntry{oldMode: f[0], newMode: f[1], oldID: f[2], newID: f[3], status: f[4], path: parts[i+1]})
	}
	return entries
}

// regular reports whether a raw entry's mode is a regular file's (or
// absent: "000000").
func regular(mode string) bool { return strings.HasPrefix(mode, "100") || mode == "000000" }

// absent is the id of the side a created or deleted file lacks.
func absent(id string) bool { return strings.Trim(id, "0") == "" }

// blobs reads the blobs ids (no more than MaxDiffFile each, nor, all
// together, than the scope's read budget left) in one `cat-file --batch`,
// each checked against its id; why says, for each id not read, why.
func (sc *scoper) blobs(ids []string) (got map[string][]byte, why map[string]string, err error) {
	got, why = map[string][]byte{}, map[string]string{}
	if len(ids) == 0 {
		return got, why, nil
	}
	check, err := sc.git.runCapped(sc.ws, true, []byte(strings.Join(ids, "\n")+"\n"), maxRawOutput, "cat-file", "--batch-check")
	if err != nil {
		return nil, nil, fmt.Errorf("scope: %w", err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(check)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "blob" {
			if len(f) > 0 {
				why[f[0]] = "not in the repository"
			}
			continue
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		switch {
		case err != nil:
			why[f[0]] = "unreadable"
		case size > MaxDiffFile:
			why[f[0]] = readWhy(errTooLarge)
		case sc.read+size > maxScopeRead:
			why[f[0]] = "the scope's read budget is spent"
		default:
			sc.read += size
			want = append(want, f[0])
		}
	}
	if len(want) == 0 {
		return got, why, nil
	}
	out, err := sc.git.runCapped(sc.ws, true, []byte(strings.Join(want, "\n")+"\n"), maxScopeRead+int64(len(want))*128, "cat-file", "--batch")
	if err != nil {
		return nil, nil, fmt.Errorf("scope: read the files: %w", err)
	}
	for _, id := range want {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			break
		}
		f := strings.Fields(string(out[:nl]))
		out = out[nl+1:]
		if len(f) != 3 {
			break
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(out) {
			break
		}
		if b := out[:size]; f[0] == id && blobID(id, b) == id {
			got[id] = b
		} else {
			why[id] = "it does not hold what its id says"
		}
		out = out[size+1:]
	}
	for _, id := range want {
		if _, ok := got[id]; !ok && why[id] == "" {
			why[id] = "unreadable"
		}
	}
	return got, why, nil
}

// addDiff adds one file's diff to the scope's, while it is within
// MaxScopeDiff; past it the file is only listed, and the note says so.
func (sc *scoper) addDiff(d string) {
	if sc.diff.Len()+len(d) > MaxScopeDiff {
		sc.cut++
		return
	}
	sc.diff.WriteString(d)
}

// hunksOf are the new side's changed ranges of one file's unified diff,
// read from its "@@ -a,b +c,d @@" lines (a content line always starts with
// ' ', '+' or '-').
func hunksOf(d string) []LineRange {
	var out []LineRange
	for rest := d; rest != ""; {
		line, next, _ := strings.Cut(rest, "\n")
		rest = next
		if !strings.HasPrefix(line, "@@ ") {
			continue
		}
		if m := hunkHeader.FindStringSubmatch(line); m != nil {
			from, _ := strconv.Atoi(m[1])
			n := 1
			if m[2] != "" {
				n, _ = strconv.Atoi(m[2])
			}
			if n > 0 {
				out = append(out, LineRange{From: from, To: from + n - 1})
			}
		}
	}
	return out
}

// ownRepository fails unless ws's git dir, its common dir and its objects
// are the workspace's own: a .git file naming another repository's git
// dir, a commondir, alternates or a core.worktree leading elsewhere would
// put another repository's files in the prompt.
func (sc *scoper) ownRepository() error {
	out, err := sc.git.run(sc.ws, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 3 || !sameDir(lines[0], sc.ws) {
		return errNoWorkTree
	}
	for _, d := range lines[1:] {
		if !filepath.IsAbs(d) {
			d = filepath.Join(sc.ws, d)
		}
		if !inside(sc.ws, d) {
			return fmt.Errorf("scope: the workspace's git dir %s lies outside it (a worktree, a submodule or a planted .git file): review it with scope paths:<files>, or from the repository's own top", d)
		}
		if _, err := os.Lstat(filepath.Join(d, "objects", "info", "alternates")); err == nil {
			return fmt.Errorf("scope: the repository borrows objects from elsewhere (objects/info/alternates): review it with scope paths:<files>")
		}
		if err := noLinks(d); err != nil {
			return err
		}
	}
	if wt, err := sc.git.config(sc.ws, "core.worktree"); err != nil || wt != "" && !sameDir(wt, sc.ws) {
		return fmt.Errorf("scope: the repository's core.worktree is set elsewhere: review it with scope paths:<files>")
	}
	return nil
}

// inside reports whether p, its links resolved, lies within dir.
func inside(dir, p string) bool {
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(rd, rp)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// maxGitDirEntries bounds the walk of a git dir's objects and refs.
const maxGitDirEntries = 200_000

// noLinks fails when anything the daemon's git reads objects or refs
// through in the git dir d is a link: objects/ and everything in it (a
// linked objects dir, pack or loose object reads another repository),
// refs/ and everything in it, packed-refs, HEAD and commondir. The walk is
// bounded; a git dir past the bound is refused rather than half checked.
func noLinks(d string) error {
	refuse := func(rel string) error {
		return fmt.Errorf("scope: the repository's %s is a link, which could read another repository: review it with scope paths:<files>", rel)
	}
	for _, name := range []string{"HEAD", "packed-refs", "commondir", "objects", "refs"} {
		if st, err := os.Lstat(filepath.Join(d, name)); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return refuse(name)
		}
	}
	seen := 0
	for _, top := range []string{"objects", "refs"} {
		err := filepath.WalkDir(filepath.Join(d, top), func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if seen++; seen > maxGitDirEntries {
				return fmt.Errorf("scope: the repository's git dir has more than %d objects and refs to check: review it with scope paths:<files>", maxGitDirEntries)
			}
			if e.Type()&os.ModeSymlink != 0 {
				rel, _ := filepath.Rel(d, p)
				return refuse(rel)
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

package changes

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// A review's scope: what a reviewer is asked to read, computed by the
// daemon with the trusted git (deepseek_review), so the review job runs no
// git command. The daemon runs git here outside every sandbox, on a
// workspace jobs write, so it runs only what reads and runs no program a
// config names: rev-parse, merge-base, ls-tree, ls-files, check-ignore,
// cat-file, and `diff` between two commits with external diff drivers and
// textconv off (a tree-to-tree diff runs no clean filter). The diff of
// uncommitted work is made here in Go, from blobs and the files as they
// are, since git's would run the repository's clean filters on them.

// The kinds of scope.
const (
	ScopeUncommitted = "uncommitted" // the work tree against HEAD, untracked files included
	ScopeBase        = "base"        // HEAD against its merge base with a ref
	ScopeCommit      = "commit"      // one commit against its first parent
	ScopePaths       = "paths"       // files, whole
)

// Bounds of a scope.
const (
	// MaxScopeFiles is the most files a scope lists; the rest are counted.
	MaxScopeFiles = 500
	// MaxScopePaths is the most paths a paths scope may name.
	MaxScopePaths = 100
)

// ScopeSpec is a parsed scope argument.
type ScopeSpec struct {
	Kind  string   `json:"kind"`
	Ref   string   `json:"ref,omitempty"`   // base: the ref; commit: the commit
	Paths []string `json:"paths,omitempty"` // paths: slash-separated, relative to the workspace
}

// String is the spec as a caller writes it.
func (s ScopeSpec) String() string {
	switch s.Kind {
	case ScopeBase, ScopeCommit:
		return s.Kind + ":" + s.Ref
	case ScopePaths:
		return "paths:" + strings.Join(s.Paths, ",")
	}
	return s.Kind
}

// refPattern is what a ref or commit argument may be: a name git would
// take as a ref, never an option or a range.
var refPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./@{}~^-]*$`)

// ParseScope reads a scope argument: "uncommitted", "base:<ref>",
// "commit:<sha or ref>" or "paths:<a>,<b>" (relative to the workspace).
func ParseScope(s string) (ScopeSpec, error) {
	s = strings.TrimSpace(s)
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case ScopeUncommitted:
		if arg != "" {
			return ScopeSpec{}, fmt.Errorf("scope %q: uncommitted takes no argument", s)
		}
		return ScopeSpec{Kind: kind}, nil
	case ScopeBase, ScopeCommit:
		if !refPattern.MatchString(arg) || strings.Contains(arg, "..") || len(arg) > 200 {
			return ScopeSpec{}, fmt.Errorf("scope %q: %s: needs a ref or commit id, such as %s:main", s, kind, kind)
		}
		return ScopeSpec{Kind: kind, Ref: arg}, nil
	case ScopePaths:
		var paths []string
		for _, p := range strings.Split(arg, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			c := path.Clean(strings.TrimPrefix(p, "./"))
			if path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
				return ScopeSpec{}, fmt.Errorf("scope %q: %q is not a path inside the workspace: give paths relative to it", s, p)
			}
			if !slices.Contains(paths, c) {
				paths = append(paths, c)
			}
		}
		switch {
		case len(paths) == 0:
			return ScopeSpec{}, fmt.Errorf("scope %q: paths: name at least one file, as paths:src/a.go,src/b.go", s)
		case len(paths) > MaxScopePaths:
			return ScopeSpec{}, fmt.Errorf("scope %q: %d paths, at most %d", s, len(paths), MaxScopePaths)
		}
		return ScopeSpec{Kind: kind, Paths: paths}, nil
	}
	return ScopeSpec{}, fmt.Errorf("scope %q: want uncommitted, base:<ref>, commit:<sha> or paths:<a>,<b>", s)
}

// LineRange is lines From to To of a file, both included, counted from 1.
type LineRange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// ScopeFile is one file of a scope.
type ScopeFile struct {
	Path string `json:"path"`
	// Change is created, modified or deleted (a diff scope), or "" (paths).
	Change string `json:"change,omitempty"`
	// Lines is how many lines the file has in the version reviewed (the
	// new side of a diff; 0 for a deleted file).
	Lines int `json:"lines"`
	// Hunks are the new side's changed line ranges (diff scopes).
	Hunks []LineRange `json:"hunks,omitempty"`
	// Binary: no lines were counted or diffed.
	Binary bool `json:"binary,omitempty"`
}

// Scope is what a review reads.
type Scope struct {
	Spec ScopeSpec `json:"spec"`
	// From and To are the commits a diff scope compares (To "" for the work
	// tree).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Diff is the unified diff of the files (diff scopes), deny paths and
	// secret files left out.
	Diff  string      `json:"-"`
	Files []ScopeFile `json:"files"`
	// FilesUnlisted counts the files past MaxScopeFiles.
	FilesUnlisted int `json:"files_unlisted,omitempty"`
	// LeftOut are the paths left out as secret files or deny paths: named,
	// never read.
	LeftOut []string `json:"left_out,omitempty"`
	// Note says what the scope could not see.
	Note string `json:"note,omitempty"`
}

// File is the scope's file at rel, if it has one.
func (s Scope) File(rel string) (ScopeFile, bool) {
	for _, f := range s.Files {
		if f.Path == rel {
			return f, true
		}
	}
	return ScopeFile{}, false
}

// errNoWorkTree: a diff scope's workspace is not the top of a git work tree.
var errNoWorkTree = errors.New("the workspace is not the top of a git work tree: review it with scope paths:<files>")

// ComputeScope computes spec's scope of ws with git; left reports the paths
// (slash-separated, relative to ws) that must be left out, beside secret
// files, which always are.
func ComputeScope(ws string, spec ScopeSpec, git Git, left func(rel string) bool) (Scope, error) {
	tree, err := sandbox.OpenTree(ws)
	if err != nil {
		return Scope{}, fmt.Errorf("open the workspace: %w", err)
	}
	defer tree.Close()
	sc := &scoper{ws: ws, git: git, tree: tree, scope: Scope{Spec: spec}, left: func(rel string) bool {
		return sandbox.IsSecretName(path.Base(rel)) || left != nil && left(rel)
	}}
	switch spec.Kind {
	case ScopePaths:
		err = sc.paths()
	case ScopeUncommitted:
		err = sc.uncommitted()
	case ScopeBase, ScopeCommit:
		err = sc.commits()
	default:
		err = fmt.Errorf("unknown scope kind %q", spec.Kind)
	}
	if err != nil {
		return Scope{}, err
	}
	s := sc.scope
	slices.SortFunc(s.Files, func(a, b ScopeFile) int { return strings.Compare(a.Path, b.Path) })
	if len(s.Files) > MaxScopeFiles {
		s.FilesUnlisted, s.Files = len(s.Files)-MaxScopeFiles, s.Files[:MaxScopeFiles]
	}
	return s, nil
}

type scoper struct {
	ws    string
	git   Git
	tree  *sandbox.Tree
	scope Scope
	left  func(rel string) bool
}

func (sc *scoper) leaveOut(rel string) bool {
	if !sc.left(rel) {
		return false
	}
	if !slices.Contains(sc.scope.LeftOut, rel) {
		sc.scope.LeftOut = append(sc.scope.LeftOut, rel)
	}
	return true
}

// paths: each named file, whole.
func (sc *scoper) paths() error {
	for _, p := range sc.scope.Spec.Paths {
		if sc.leaveOut(p) {
			continue
		}
		b, err := readSmall(sc.tree, p, MaxDiffFile)
		if err != nil {
			return fmt.Errorf("scope: %s: %s", p, readWhy(err))
		}
		sc.scope.Files = append(sc.scope.Files, fileOf(p, "", b))
	}
	return nil
}

func fileOf(rel, change string, b []byte) ScopeFile {
	f := ScopeFile{Path: rel, Change: change}
	if bytes.IndexByte(b, 0) >= 0 {
		f.Binary = true
		return f
	}
	f.Lines = countLines(b)
	return f
}

func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// top checks that ws is its work tree's top and returns HEAD ("" when the
// repository has no commit).
func (sc *scoper) top() (string, error) {
	out, err := sc.git.run(sc.ws, "rev-parse", "--show-toplevel")
	if err != nil || !sameDir(strings.TrimSpace(string(out)), sc.ws) {
		return "", errNoWorkTree
	}
	head, err := sc.git.run(sc.ws, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return "", nil
	}
	return strings.TrimSpace(string(head)), nil
}

// commit resolves ref to a commit id.
func (sc *scoper) commit(ref string) (string, error) {
	out, err := sc.git.run(sc.ws, "rev-parse", "--verify", "-q", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("scope: %q is not a commit of the workspace's repository", ref)
	}
	return strings.TrimSpace(string(out)), nil
}

// commits: the diff between two commits, made by git.
func (sc *scoper) commits() error {
	head, err := sc.top()
	if err != nil {
		return err
	}
	spec := sc.scope.Spec
	var from, to string
	switch spec.Kind {
	case ScopeBase:
		if head == "" {
			return errors.New("scope: the repository has no commit yet: review it with scope uncommitted")
		}
		base, err := sc.commit(spec.Ref)
		if err != nil {
			return err
		}
		out, err := sc.git.run(sc.ws, "merge-base", base, head)
		if err != nil {
			return fmt.Errorf("scope: %s and HEAD have no common ancestor", spec.Ref)
		}
		from, to = strings.TrimSpace(string(out)), head
	case ScopeCommit:
		if to, err = sc.commit(spec.Ref); err != nil {
			return err
		}
		if out, err := sc.git.run(sc.ws, "rev-parse", "--verify", "-q", to+"^1"); err == nil {
			from = strings.TrimSpace(string(out))
		} else {
			// A root commit: against the empty tree of the repository's hash.
			out, err := sc.git.runIn(sc.ws, []byte{}, "hash-object", "-t", "tree", "--stdin")
			if err != nil {
				return fmt.Errorf("scope: the empty tree: %w", err)
			}
			from = strings.TrimSpace(string(out))
		}
	}
	sc.scope.From, sc.scope.To = from, to
	out, err := sc.git.run(sc.ws, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--full-index",
		"--src-prefix=a/", "--dst-prefix=b/", "-U3", from, to, "--")
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	var kept []string
	var want []string
	for _, sec := range splitDiff(string(out)) {
		if sc.leaveOut(sec.path) {
			continue
		}
		kept = append(kept, sec.text)
		f := ScopeFile{Path: sec.path, Change: sec.change, Hunks: sec.hunks, Binary: sec.binary}
		sc.scope.Files = append(sc.scope.Files, f)
		if f.Change != Deleted && !f.Binary {
			want = append(want, to+":"+sec.path)
		}
	}
	sc.scope.Diff = strings.Join(kept, "")
	return sc.countAt(want)
}

// countAt sets the lines of each scope file from the objects named (as
// <commit>:<path>), read in one `cat-file --batch`.
func (sc *scoper) countAt(names []string) error {
	if len(names) == 0 {
		return nil
	}
	out, err := sc.git.runIn(sc.ws, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return fmt.Errorf("scope: read the files: %w", err)
	}
	lines := map[string]int{}
	for _, name := range names {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			break
		}
		f := strings.Fields(string(out[:nl]))
		out = out[nl+1:]
		if len(f) != 3 || f[1] != "blob" {
			continue // missing, or not a blob
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(out) {
			break
		}
		_, rel, _ := strings.Cut(name, ":")
		lines[rel] = countLines(out[:size])
		out = out[size+1:]
	}
	for i := range sc.scope.Files {
		if n, ok := lines[sc.scope.Files[i].Path]; ok {
			sc.scope.Files[i].Lines = n
		}
	}
	return nil
}

// diffSection is one file's part of a unified diff.
type diffSection struct {
	path, change, text string
	hunks              []LineRange
	binary             bool
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// splitDiff cuts a git-style unified diff into its files.
func splitDiff(diff string) []diffSection {
	var out []diffSection
	for _, part := range strings.SplitAfter(diff, "\n") {
		if strings.HasPrefix(part, "diff --git ") {
			out = append(out, diffSection{change: Modified})
		}
		if len(out) == 0 {
			continue
		}
		s := &out[len(out)-1]
		s.text += part
		line := strings.TrimSuffix(part, "\n")
		switch {
		case strings.HasPrefix(line, "new file"):
			s.change = Created
		case strings.HasPrefix(line, "deleted file"):
			s.change = Deleted
		case strings.HasPrefix(line, "Binary files "):
			s.binary = true
		case strings.HasPrefix(line, "--- a/") && s.path == "":
			s.path = strings.TrimPrefix(line, "--- a/")
		case strings.HasPrefix(line, "+++ b/"):
			s.path = strings.TrimPrefix(line, "+++ b/")
		default:
			if m := hunkHeader.FindStringSubmatch(line); m != nil {
				from, _ := strconv.Atoi(m[1])
				n := 1
				if m[2] != "" {
					n, _ = strconv.Atoi(m[2])
				}
				if n > 0 {
					s.hunks = append(s.hunks, LineRange{From: from, To: from + n - 1})
				}
			}
		}
	}
	for i := range out {
		if out[i].path == "" { // a binary or mode-only section: the header's name
			out[i].path = headerPath(out[i].text)
		}
	}
	return out
}

// headerPath is the b/ name of a "diff --git a/X b/X" line.
func headerPath(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	rest := strings.TrimPrefix(line, "diff --git ")
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

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

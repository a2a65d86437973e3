package changes

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
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
	// new side of a diff; 0 for a deleted file; -1 when it was not read).
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
	s.Diff = sc.diff.String()
	if sc.cut > 0 {
		s.Note = joinNote(s.Note, fmt.Sprintf("the diff is cut at %d KiB: %d more changed files are listed without theirs", MaxScopeDiff>>10, sc.cut))
	}
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
	read  int64           // bytes of blobs and files read so far (maxScopeRead)
	diff  strings.Builder // the scope's diff (MaxScopeDiff)
	cut   int             // files listed past MaxScopeDiff, without their diff
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
	if err := sc.ownRepository(); err != nil {
		return "", err
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
	out, err := sc.git.runCapped(sc.ws, true, nil, maxRawOutput, "diff", "--raw", "-z", "--no-abbrev", "--no-renames", "--no-ext-diff", "--no-textconv", "--submodule=short", from, to, "--")
	if err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	var entries []rawEntry
	var ids []string
	for _, e := range parseRaw(out) {
		if sc.leaveOut(e.path) {
			continue
		}
		entries = append(entries, e)
		if regular(e.oldMode) && regular(e.newMode) {
			for _, id := range []string{e.oldID, e.newID} {
				if !absent(id) {
					ids = append(ids, id)
				}
			}
		}
	}
	blobs, why, err := sc.blobs(ids)
	if err != nil {
		return err
	}
	for _, e := range entries {
		sc.treeFile(e, blobs, why)
	}
	return nil
}

// treeFile adds one file of a diff between commits to the scope, with its
// diff made from the blobs read.
func (sc *scoper) treeFile(e rawEntry, blobs map[string][]byte, why map[string]string) {
	ch := Change{Path: e.path, Change: Modified}
	switch {
	case absent(e.oldID):
		ch.Change = Created
	case absent(e.newID):
		ch.Change = Deleted
	}
	f := ScopeFile{Path: e.path, Change: ch.Change, Lines: -1} // Lines -1: not read
	if !regular(e.oldMode) || !regular(e.newMode) {
		sc.addDiff(header(ch) + fmt.Sprintf("(not shown: a link or submodule, mode %s to %s)\n", e.oldMode, e.newMode))
		f.Binary = true
		sc.scope.Files = append(sc.scope.Files, f)
		return
	}
	side := func(id string) ([]byte, string) {
		if absent(id) {
			return nil, ""
		}
		b, ok := blobs[id]
		if !ok {
			return nil, why[id]
		}
		return b, ""
	}
	before, whyBefore := side(e.oldID)
	after, whyAfter := side(e.newID)
	switch {
	case whyBefore != "" || whyAfter != "":
		sc.addDiff(header(ch) + "(not shown: " + joinNote(whyBefore, whyAfter) + ")\n")
		if whyAfter == "" && ch.Change != Deleted {
			f = fileOf(e.path, ch.Change, after)
		}
	case bytes.IndexByte(before, 0) >= 0 || bytes.IndexByte(after, 0) >= 0:
		f.Binary = true
		sc.addDiff(binaryDiff(ch))
	default:
		d := unified(ch, string(before), string(after))
		f = fileOf(e.path, ch.Change, after)
		if ch.Change == Deleted {
			f.Lines = 0
		}
		f.Hunks = hunksOf(d)
		sc.addDiff(d)
	}
	sc.scope.Files = append(sc.scope.Files, f)
}

// ReadTop reads the regular files names of ws's top that exist, through
// the workspace opened once (no link followed), at most limit bytes in all
// (a file past it is cut), leaving out secret files; each is headed by its
// name.
func ReadTop(ws string, names []string, limit int) (string, error) {
	tree, err := sandbox.OpenTree(ws)
	if err != nil {
		return "", fmt.Errorf("open the workspace: %w", err)
	}
	defer tree.Close()
	var b strings.Builder
	for _, name := range names {
		if sandbox.IsSecretName(name) || b.Len() >= limit {
			continue
		}
		c, err := readSmall(tree, name, MaxDiffFile)
		if err != nil || bytes.IndexByte(c, 0) >= 0 {
			continue // absent, a link, too large or binary: not instructions
		}
		head := "# " + name + "\n"
		room := limit - b.Len() - len(head) - 1
		if room <= 0 {
			break
		}
		b.WriteString(head)
		b.Write(c[:min(len(c), room)])
		b.WriteString("\n")
	}
	return b.String(), nil
}

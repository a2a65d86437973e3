package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/internal/workers"
)

// DefaultSecretScanLimit is how many directory entries WorkspaceSecrets
// visits by default before it stops descending.
const DefaultSecretScanLimit = 20000

// nameRule is one row of secretNameTable: a way to match a lower-cased file
// name, and whether a name it matches is a secret.
type nameRule struct {
	kind    matchKind
	pattern string
	secret  bool
	why     string
}

type matchKind int

const (
	exact  matchKind = iota // the whole name
	prefix                  // the name starts with pattern
	suffix                  // the name ends with pattern
	part                    // one of the name's "."-separated parts is pattern
)

// secretNameTable decides which file names are secrets a sandboxed command
// must not read. Names are lower-cased first; a name is a secret when a
// secret row matches it and no template row does. Only files (and symlinks)
// are matched, never directories: `python -m venv .env` makes a directory.
//
// The template rows exist because a coding job legitimately reads
// `.env.example` and its kin to learn which variables exist; they hold no
// secrets by convention.
var secretNameTable = []nameRule{
	{part, "example", false, "a template: .env.example, example.env"},
	{part, "sample", false, "a template: .env.sample"},
	{part, "template", false, "a template: .env.template"},
	{part, "dist", false, "a template: .env.dist"},
	{part, "tmpl", false, "a template: .env.tmpl"},
	{part, "tpl", false, "a template: .env.tpl"},

	{exact, ".env", true, "dotenv"},
	{prefix, ".env.", true, "dotenv variants: .env.local, .env.production, .env.test"},
	{exact, ".envrc", true, "direnv"},
	{suffix, ".env", true, "named env files: prod.env, secrets.env"},

	// Network credentials: useless to a command in a sandbox without network,
	// and nothing a coding job needs to read.
	{exact, ".netrc", true, "machine passwords"},
	{exact, ".npmrc", true, "npm registry tokens"},
	{exact, ".pypirc", true, "PyPI tokens"},
	{exact, ".git-credentials", true, "git credential store"},
	{exact, ".dockercfg", true, "docker registry auth"},
	{exact, ".vault-token", true, "HashiCorp Vault token"},
	{exact, "id_rsa", true, "SSH private key"},
	{exact, "id_dsa", true, "SSH private key"},
	{exact, "id_ecdsa", true, "SSH private key"},
	{exact, "id_ed25519", true, "SSH private key"},
}

// IsSecretName reports whether a file called name (a base name) is a secret
// by secretNameTable.
func IsSecretName(name string) bool {
	n := strings.ToLower(name)
	if !matchesRow(n, true) {
		return false
	}
	return !matchesRow(n, false)
}

// matchesRow reports whether a row of secretNameTable with the given secret
// column matches the lower-cased name n.
func matchesRow(n string, secret bool) bool {
	for _, r := range secretNameTable {
		if r.secret != secret {
			continue
		}
		var hit bool
		switch r.kind {
		case exact:
			hit = n == r.pattern
		case prefix:
			hit = strings.HasPrefix(n, r.pattern)
		case suffix:
			hit = strings.HasSuffix(n, r.pattern)
		case part:
			hit = slices.Contains(strings.Split(n, "."), r.pattern)
		}
		if hit {
			return true
		}
	}
	return false
}

// skippedDirs are directories WorkspaceSecrets does not descend into:
// version-control stores and vendored or generated dependency trees, which
// are large and hold no project secrets by convention.
var skippedDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, ".jj": true,
	"node_modules": true, "bower_components": true, "vendor": true,
	".venv": true, "__pycache__": true, ".tox": true, ".mypy_cache": true,
	".pytest_cache": true, ".gradle": true, ".terraform": true,
}

// SecretScan is what WorkspaceSecrets found.
type SecretScan struct {
	// Paths are the absolute paths to deny, sorted: each secret file as it
	// is named in the workspace, and for a symlink whose name or target is a
	// secret also its target when that lies inside the workspace.
	Paths []string
	// Visited is the number of directory entries looked at.
	Visited int
	// Truncated is true when the limit was reached: the directories still
	// waiting then — at the depth the walk had reached and the next one —
	// were not listed (Unlisted of them), nor anything below them, so a
	// secret file there is not in Paths.
	Truncated bool
	Unlisted  int
	// Unreadable are directories that could not be listed (their error).
	Unreadable []string
	// HardLinked are secret files with more than one hard link: the same
	// contents are readable under another name this scan cannot know.
	HardLinked []string
	// Files is the manifest of the regular files and symlinks the walk
	// listed (WorkspaceScan with manifest only), sorted by path: the
	// record a job's changes are compared against.
	Files []FileEntry
}

// FileEntry is one file of a workspace manifest. Only metadata: the walk
// reads no file's contents.
type FileEntry struct {
	// Path is relative to the workspace, with "/" separators.
	Path    string      `json:"path"`
	Size    int64       `json:"size"`
	ModTime int64       `json:"mtime_ns"` // modification time, Unix nanoseconds
	Mode    fs.FileMode `json:"mode"`
	// Secret: a secret file by name (IsSecretName); its contents are never read.
	Secret bool `json:"secret,omitempty"`
}

// WorkspaceSecrets lists the secret-looking files (IsSecretName) that exist
// in workspace now, for the job's sandbox to deny reading.
//
// The walk is breadth first, never follows a symlink (a symlinked directory
// is not entered, so nothing outside the workspace is walked), skips
// skippedDirs, and visits at most limit entries (DefaultSecretScanLimit when
// limit <= 0). The top level is always listed whole, whatever its size; past
// the limit no further directory is listed: Truncated is set and Unlisted
// counts the directories left, so the caller can log that secrets below the
// reached depth are not denied. It never returns an empty result silently:
// an error only when the workspace itself cannot be listed.
//
// A symlink is denied when its own name or its target's name is a secret;
// its target is denied too when it resolves inside the workspace.
func WorkspaceSecrets(workspace string, limit int) (SecretScan, error) {
	return WorkspaceScan(workspace, limit, false)
}

// WorkspaceScan is WorkspaceSecrets, and with manifest it also lists every
// regular file and symlink it passes in Files (one lstat each; the skipped
// dirs and what lies past the limit are not listed), so the one bounded walk
// at a job's start serves both the secret denials and the record of what
// the workspace held.
func WorkspaceScan(workspace string, limit int, manifest bool) (SecretScan, error) {
	return workspaceScan(workspace, limit, manifest, func(_, name string) bool { return skippedDirs[name] })
}

// WorkspaceRecordScan is WorkspaceScan with its manifest for the record of
// a job that writes straight into its workspace (no overlay could be had):
// it enters every directory — dependency folders, venvs and caches, which
// tools load code from, included — but the object stores of git dirs
// (objects/ and lfs/ in a dir named .git), whose files are named by their
// contents. limit bounds it like the others (DefaultRunsLaterLimit when
// limit <= 0).
func WorkspaceRecordScan(workspace string, limit int) (SecretScan, error) {
	if limit <= 0 {
		limit = DefaultRunsLaterLimit
	}
	return workspaceScan(workspace, limit, true, func(dir, name string) bool {
		return (name == "objects" || name == "lfs") && filepath.Base(dir) == ".git"
	})
}

func workspaceScan(workspace string, limit int, manifest bool, skip func(dir, name string) bool) (SecretScan, error) {
	var scan SecretScan
	if workspace == "" || !filepath.IsAbs(workspace) {
		return scan, fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	if limit <= 0 {
		limit = DefaultSecretScanLimit
	}
	ws := filepath.Clean(workspace)
	wsResolved, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return scan, fmt.Errorf("workspace %s: %w", ws, err)
	}
	// Every directory is listed relative to the workspace opened once, with
	// no link followed on the way (Tree): a directory swapped for a link
	// during the walk is not entered, and the manifest's lstats are taken
	// in the directory that was listed.
	tree, err := OpenTree(ws)
	if err != nil {
		return scan, fmt.Errorf("list workspace %s: %w", ws, err)
	}
	defer tree.Close()
	list := func(dir string) ([]fs.DirEntry, error) { return tree.ReadDir(tree.Rel(dir), manifest) }
	var listed []listedFile // appended by visit, which walkLevels calls on one goroutine
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			scan.Paths = append(scan.Paths, p)
		}
	}

	w, err := walkLevels(ws, limit, &scan.Visited, list, func(dir string, err error) {
		scan.Unreadable = append(scan.Unreadable, fmt.Sprintf("%s: %v", dir, err))
	}, func(dir string, entries []fs.DirEntry) (next []string) {
		prefix := dir
		if !strings.HasSuffix(prefix, string(filepath.Separator)) {
			prefix += string(filepath.Separator)
		}
		for _, e := range entries {
			name := e.Name()
			if manifest && !e.IsDir() {
				listed = append(listed, listedFile{filepath.Join(dir, name), e})
			}
			switch t := e.Type(); {
			case t.IsDir():
				if !skip(dir, name) {
					next = append(next, prefix+name)
				}
			case t&fs.ModeSymlink != 0:
				secretLink(filepath.Join(dir, name), name, wsResolved, add)
			case IsSecretName(name):
				p := filepath.Join(dir, name)
				add(p)
				if n, ok := hardLinks(p); ok && n > 1 {
					scan.HardLinked = append(scan.HardLinked, p)
				}
			}
		}
		return next
	})
	scan.Truncated, scan.Unlisted = w.truncated, w.unlisted
	if err != nil {
		return scan, err
	}
	slices.Sort(scan.Paths)
	if manifest {
		scan.Files = manifestOf(ws, listed)
	}
	return scan, nil
}

// listedFile is a non-directory entry of the walk, for the manifest.
type listedFile struct {
	path string
	e    fs.DirEntry
}

// manifestOf is the manifest of the listed files, sorted by path; their
// lstats were taken as their directories were listed (Tree.ReadDir).
func manifestOf(ws string, listed []listedFile) []FileEntry {
	files := make([]FileEntry, len(listed))
	for i, l := range listed {
		files[i] = fileEntry(ws, l.path, l.e)
	}
	slices.SortFunc(files, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	return files
}

// fileEntry is the manifest line of p, a non-directory entry of the walk.
func fileEntry(ws, p string, e fs.DirEntry) FileEntry {
	rel, err := filepath.Rel(ws, p)
	if err != nil {
		rel = p
	}
	fe := FileEntry{Path: filepath.ToSlash(rel), Mode: e.Type(), Secret: IsSecretName(e.Name())}
	if info, err := e.Info(); err == nil {
		fe.Size, fe.ModTime, fe.Mode = info.Size(), info.ModTime().UnixNano(), info.Mode()
	}
	return fe
}

// walked says whether walkLevels stopped at its limit.
type walked struct {
	truncated bool // the limit was reached
	unlisted  int  // directories left unlisted because of it
}

// walkLevels is the bounded breadth-first walk of a workspace that
// WorkspaceSecrets and ScanRunsLater share (list lists a directory; nil:
// listDir): visit gets each listed
// directory's entries and returns the directories to list next; once
// *visited (which visit may add to as well) reaches limit no further
// directory is listed (the top always is), and those left are counted. A directory that cannot be
// listed goes to unreadable, and fails the walk when it is ws itself.
func walkLevels(ws string, limit int, visited *int, list func(dir string) ([]fs.DirEntry, error), unreadable func(dir string, err error), visit func(dir string, entries []fs.DirEntry) []string) (walked, error) {
	var w walked
	if list == nil {
		list = listDir
	}
	level := []string{ws}
	for len(level) > 0 && !w.truncated {
		var next []string
		for _, r := range listLevel(level, ws, limit, visited, list) {
			switch {
			case r.skipped:
				w.truncated = true
				w.unlisted++
				continue
			case r.err != nil && r.dir == ws:
				return w, fmt.Errorf("list workspace %s: %w", ws, r.err)
			case r.err != nil:
				if unreadable != nil {
					unreadable(r.dir, r.err)
				}
				continue
			}
			next = append(next, visit(r.dir, r.entries)...)
		}
		if w.truncated {
			w.unlisted += len(next)
		}
		level = next
	}
	return w, nil
}

// scanWorkers is how many directories WorkspaceSecrets lists at once: the
// walk waits on the file system more than on the CPU.
const scanWorkers = 4

// dirListing is one directory's entries (or why there are none).
type dirListing struct {
	dir     string
	entries []fs.DirEntry
	err     error
	skipped bool // not listed: the limit was reached
}

// listLevel lists the directories of one level of the walk with up to
// scanWorkers goroutines, adding to *visited; a directory other than ws is
// skipped once *visited has reached limit. It returns when every worker has
// ended.
func listLevel(level []string, ws string, limit int, visited *int, list func(string) ([]fs.DirEntry, error)) []dirListing {
	out := make([]dirListing, len(level))
	var mu sync.Mutex // guards *visited
	workers.Each(len(level), scanWorkers, func(i int) {
		mu.Lock()
		full := *visited >= limit
		mu.Unlock()
		out[i].dir = level[i]
		if full && level[i] != ws {
			out[i].skipped = true
			return
		}
		out[i].entries, out[i].err = list(level[i])
		mu.Lock()
		*visited += len(out[i].entries)
		mu.Unlock()
	})
	return out
}

// listDir lists dir unsorted, refusing to follow it if it was swapped for a
// symlink since its parent was listed.
func listDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|openDirFlags, 0)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	return entries, nil
}

// globMetaClaude are the characters that make Claude Code 2.1.328 read a
// denyRead entry as a glob pattern (and a permission rule as a gitignore
// pattern).
const globMetaClaude = "*?[]"

// LiteralPattern turns path into a pattern Claude Code's sandbox and
// permission rules match against path itself: each glob character is
// replaced by "?", which matches any one character but "/". A path without
// one is returned unchanged. The pattern may also match a few same-shaped
// siblings (`a[1]` also matches `a_1_`), which errs on the side of hiding.
// Next.js route directories such as app/[slug]/ need it.
func LiteralPattern(path string) string {
	if !strings.ContainsAny(path, globMetaClaude) {
		return path
	}
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(globMetaClaude, r) {
			return '?'
		}
		return r
	}, path)
}

// secretLink adds a symlink at p (named name) when its name or its target's
// name is a secret, and its resolved target when that lies inside the
// resolved workspace. A link to a directory is never a secret by its name.
func secretLink(p, name, wsResolved string, add func(string)) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		// Dangling or looping: deny it by its name alone.
		if IsSecretName(name) {
			add(p)
		}
		return
	}
	fi, err := os.Stat(target)
	if err != nil || fi.IsDir() {
		return
	}
	if !IsSecretName(name) && !IsSecretName(filepath.Base(target)) {
		return
	}
	add(p)
	if within(target, wsResolved) {
		add(target)
	}
}

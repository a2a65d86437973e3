package sandbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultRunsLaterLimit is how many directory entries ScanRunsLater visits
// before it stops descending.
const DefaultRunsLaterLimit = 200000

// maxHashedBytes bounds what ScanRunsLater reads of one file; a larger file
// is told apart by its size and the hash of its first maxHashedBytes.
const maxHashedBytes = 4 << 20

// RunsLaterFiles are file names whose contents other programs run or obey
// later on the owner's machine, outside any sandbox, wherever they lie in a
// workspace: shell start-up files, direnv, package managers' and build
// tools' rc files, hook managers' configs, editors' and agents' settings.
// The list is Claude Code 2.1.328's own write protection and the bridge's.
var RunsLaterFiles = []string{
	".gitconfig", ".gitmodules",
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
	".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", "config.fish",
	".envrc", ".ripgreprc", ".mcp.json", ".claude.json",
	".npmrc", ".yarnrc", ".yarnrc.yml", ".pnp.cjs", ".pnp.loader.mjs", ".pnpmfile.cjs", "bunfig.toml", ".bunfig.toml",
	".bazelrc", ".bazelversion", ".bazeliskrc",
	".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml",
	"gradle-wrapper.properties", "maven-wrapper.properties", ".devcontainer.json", "pyrightconfig.json",
	// Toolchain selectors that can name a path of the workspace as the
	// toolchain (rustup runs the cargo it names), and mise's config, whose
	// hooks its shell integration runs on cd.
	"rust-toolchain", "rust-toolchain.toml", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml",
}

// RunsLaterDirs are directories every file of which runs later: git hook
// dirs of hook managers, editors' task and settings dirs, Claude Code's
// project settings.
var RunsLaterDirs = []string{".githooks", ".husky", ".vscode", ".idea", ".claude", ".devcontainer",
	".cursor", ".zed", ".codex", ".gemini", ".mise"}

// gitDirMembers are what of a git directory runs later: its config (filters,
// fsmonitor, aliases, hooksPath), hooks, info (attributes, exclude) and the
// links that make it use another dir's config.
var gitDirMembers = []string{"config", "config.worktree", "hooks", "info", "commondir", "gitdir"}

// Planted is one thing in a workspace that other programs run later: a git
// dir or gitfile, a git dir's config, hook or info file, or a RunsLater file.
type Planted struct {
	// Path is relative to the workspace, with "/" separators.
	Path string `json:"path"`
	// What it is: "git dir", "gitfile", "git config", "git hook", "git info",
	// "hook file" (in RunsLaterDirs or a repository's core.hooksPath) or
	// "runs-later file".
	What string `json:"what"`
	// Sum is a sha256 of the contents (a link's target; "" for a dir), with
	// the permission bits, so an exec bit added counts as a change.
	Sum string `json:"sum"`
	// Empty: an empty file, or a dir (a git dir: one with no entries at
	// all). What is only empty runs nothing: Claude Code itself leaves an
	// empty .claude/.cc-writes dir and empty mount points behind.
	Empty bool `json:"empty,omitempty"`
}

// RunsLaterScan is what ScanRunsLater found.
type RunsLaterScan struct {
	Items   map[string]Planted `json:"items"`
	Visited int                `json:"visited"`
	// Truncated: the limit was reached and Unlisted directories were not
	// looked at; a file planted there is not seen.
	Truncated bool `json:"truncated,omitempty"`
	Unlisted  int  `json:"unlisted,omitempty"`
}

// ScanRunsLater lists everything in workspace that other programs run later
// (see Planted), with a hash of each, so that the same scan at a job's end
// shows what the job created or changed. It looks at what exists, not at
// how it was made: a directory shaped like a git dir (HEAD, objects/, refs/)
// counts whatever its name, and so does every `.git` file or link. The walk
// is breadth first, never follows a symlink, does not descend into git dirs
// (their members are read directly) and visits at most limit entries
// (DefaultRunsLaterLimit when limit <= 0); the top level is always listed.
func ScanRunsLater(workspace string, limit int) (RunsLaterScan, error) {
	scan := RunsLaterScan{Items: map[string]Planted{}}
	if !filepath.IsAbs(workspace) {
		return scan, fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	if limit <= 0 {
		limit = DefaultRunsLaterLimit
	}
	ws := filepath.Clean(workspace)
	s := &runsLaterWalk{ws: ws, scan: &scan}
	w, err := walkLevels(ws, limit, &scan.Visited, nil, nil, func(dir string, entries []fs.DirEntry) (next []string) {
		if isGitDirShape(dir, entries) {
			if dir != ws {
				s.gitDir(dir)
				return nil
			}
			// The workspace itself shaped as a git dir (Write can make
			// one): its members count, the workspace is not moved.
			s.gitMembers(ws)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			name := e.Name()
			t := e.Type()
			switch {
			case name == ".git" && t.IsDir():
				s.gitDir(p)
			case name == ".git":
				s.add(p, "gitfile")
				s.gitfileTarget(p)
			case slices.Contains(RunsLaterDirs, strings.ToLower(name)) && (t.IsDir() || t&fs.ModeSymlink != 0):
				if t&fs.ModeSymlink != 0 {
					s.add(p, "hook file")
					if target, ok := s.inside(p); ok {
						s.tree(target, "hook file", limit)
					}
					continue
				}
				s.tree(p, "hook file", limit)
			case t.IsDir():
				next = append(next, p)
			case slices.Contains(RunsLaterFiles, strings.ToLower(name)):
				s.add(p, "runs-later file")
			}
		}
		return next
	})
	scan.Truncated = scan.Truncated || w.truncated
	scan.Unlisted += w.unlisted
	if err != nil {
		return scan, err
	}
	for _, hp := range s.hooksPaths {
		s.tree(hp, "hook file", limit)
	}
	return scan, nil
}

type runsLaterWalk struct {
	ws         string
	scan       *RunsLaterScan
	hooksPaths []string
}

func (s *runsLaterWalk) rel(p string) string {
	r, err := filepath.Rel(s.ws, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// add records p, never followed: a link is recorded by its target's name.
// When that target is a file inside the workspace it is recorded too (a
// hook that is a link to scripts/pre-commit.sh runs what that file holds).
func (s *runsLaterWalk) add(p, what string) {
	it := Planted{Path: s.rel(p), What: what, Sum: sumOf(p)}
	if st, err := os.Lstat(p); err == nil {
		switch {
		case st.Mode().IsRegular():
			it.Empty = st.Size() == 0
		case st.IsDir():
			entries, _ := listDir(p)
			it.Empty = len(entries) == 0
		case st.Mode()&fs.ModeSymlink != 0:
			if target, ok := s.inside(p); ok {
				if tst, err := os.Stat(target); err == nil && tst.Mode().IsRegular() {
					s.scan.Items[s.rel(target)] = Planted{Path: s.rel(target), What: what, Sum: sumOf(target), Empty: tst.Size() == 0}
				}
			}
		}
	}
	s.scan.Items[s.rel(p)] = it
}

// inside resolves the link p and reports its target, spelled under the
// workspace as given, when that lies inside the workspace.
func (s *runsLaterWalk) inside(p string) (string, bool) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	ws := s.ws
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	if !within(target, ws) || target == ws {
		return "", false
	}
	rel, err := filepath.Rel(ws, target)
	if err != nil {
		return "", false
	}
	return filepath.Join(s.ws, rel), true
}

// gitfileTarget records the git dir a gitfile (`gitdir: …`) or a .git link
// names, when it lies inside the workspace: a submodule's or worktree's
// config and hooks run like the top repository's.
func (s *runsLaterWalk) gitfileTarget(p string) {
	var target string
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		t, ok := s.inside(p)
		if !ok {
			return
		}
		target = t
	} else {
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 4096 {
			return
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return
		}
		target = strings.TrimSpace(rest)
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		target = filepath.Clean(target)
		if !within(target, filepath.Clean(s.ws)) || target == filepath.Clean(s.ws) {
			return
		}
	}
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		s.gitDir(target)
	}
}

// gitDir records a git dir, its members, and the git dirs of its
// submodules (modules/…) and worktrees (worktrees/…).
func (s *runsLaterWalk) gitDir(dir string) {
	if _, seen := s.scan.Items[s.rel(dir)]; seen {
		return
	}
	entries, _ := listDir(dir)
	s.scan.Items[s.rel(dir)] = Planted{Path: s.rel(dir), What: "git dir", Empty: len(entries) == 0}
	s.gitMembers(dir)
	s.nestedGitDirs(filepath.Join(dir, "modules"), false, 0)
	s.nestedGitDirs(filepath.Join(dir, "worktrees"), true, 0)
}

// nestedGitDirs finds the git dirs below a git dir's modules/ (a nested
// module's name can hold slashes: modules/a/b) or, every entry, worktrees/.
func (s *runsLaterWalk) nestedGitDirs(dir string, every bool, depth int) {
	if depth > 8 {
		return
	}
	entries, err := listDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		sub, _ := listDir(p)
		if every || isGitDirShape(p, sub) {
			s.gitDir(p)
			continue
		}
		s.nestedGitDirs(p, false, depth+1)
	}
}

// gitMembers records what of a git dir runs later, and notes its
// core.hooksPath when that lies inside the workspace.
func (s *runsLaterWalk) gitMembers(dir string) {
	for _, m := range gitDirMembers {
		p := filepath.Join(dir, m)
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		what := "git config"
		switch m {
		case "hooks":
			what = "git hook"
		case "info":
			what = "git info"
		}
		if st.IsDir() {
			s.scan.Items[s.rel(p)] = Planted{Path: s.rel(p), What: what}
			entries, err := listDir(p)
			if err != nil {
				continue
			}
			for _, e := range entries {
				s.add(filepath.Join(p, e.Name()), what)
			}
			continue
		}
		s.add(p, what)
	}
	if hp := hooksPath(filepath.Join(dir, "config")); hp != "" {
		if !filepath.IsAbs(hp) {
			// Relative to the work tree: the git dir's parent for a .git.
			hp = filepath.Join(filepath.Dir(dir), hp)
		}
		if within(filepath.Clean(hp), s.ws) && filepath.Clean(hp) != s.ws {
			s.hooksPaths = append(s.hooksPaths, filepath.Clean(hp))
		}
	}
}

// tree records dir and every file below it, within the scan's limit.
func (s *runsLaterWalk) tree(dir, what string, limit int) {
	if _, ok := s.scan.Items[s.rel(dir)]; ok {
		return
	}
	s.scan.Items[s.rel(dir)] = Planted{Path: s.rel(dir), What: what, Empty: true}
	level := []string{dir}
	for len(level) > 0 {
		var next []string
		for _, d := range level {
			if s.scan.Visited >= limit {
				s.scan.Truncated = true
				s.scan.Unlisted++
				continue
			}
			entries, err := listDir(d)
			if err != nil {
				continue
			}
			s.scan.Visited += len(entries)
			for _, e := range entries {
				p := filepath.Join(d, e.Name())
				if e.IsDir() {
					s.scan.Items[s.rel(p)] = Planted{Path: s.rel(p), What: what, Empty: true}
					next = append(next, p)
					continue
				}
				s.add(p, what)
			}
		}
		level = next
	}
}

// isGitDirShape reports whether a directory's entries make it a git dir to
// git's discovery: a HEAD file with objects/ and refs/ beside it, links to
// dirs counted as dirs (git follows them).
func isGitDirShape(dir string, entries []fs.DirEntry) bool {
	var head, objects, refs bool
	isDir := func(e fs.DirEntry) bool {
		if e.IsDir() {
			return true
		}
		if e.Type()&fs.ModeSymlink == 0 {
			return false
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && st.IsDir()
	}
	for _, e := range entries {
		switch e.Name() {
		case "HEAD":
			head = !e.IsDir()
		case "objects":
			objects = isDir(e)
		case "refs":
			refs = isDir(e)
		}
	}
	return head && objects && refs
}

// hooksPath reads core.hooksPath from a git config file without running
// git: the last `hookspath = …` of a [core] section ("" when none).
func hooksPath(config string) string {
	f, err := os.Open(config)
	if err != nil {
		return ""
	}
	defer f.Close()
	var section, value string
	sc := bufio.NewScanner(io.LimitReader(f, maxHashedBytes))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			value = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return value
}

// sumOf hashes a file's mode and contents, a link's target, or returns "d"
// for a directory; an unreadable file hashes its error, so it still counts
// as present.
func sumOf(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return "missing"
	}
	h := sha256.New()
	fmt.Fprintf(h, "%o\x00", st.Mode())
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		io.WriteString(h, t)
	case st.IsDir():
		return "d"
	case st.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(h, "error: %v", err)
			break
		}
		fmt.Fprintf(h, "%d\x00", st.Size())
		_, _ = io.Copy(h, io.LimitReader(f, maxHashedBytes))
		f.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

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

	"mvdan.cc/sh/v3/syntax"
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
	level := []string{ws}
	for len(level) > 0 && !scan.Truncated {
		var next []string
		for _, r := range listLevel(level, ws, limit, &scan.Visited) {
			switch {
			case r.skipped:
				scan.Truncated = true
				scan.Unlisted++
				continue
			case r.err != nil && r.dir == ws:
				return scan, fmt.Errorf("list workspace %s: %w", ws, r.err)
			case r.err != nil:
				continue
			}
			if isGitDirShape(r.dir, r.entries) {
				if r.dir != ws {
					s.gitDir(r.dir)
					continue
				}
				// The workspace itself shaped as a git dir (Write can make
				// one): its members count, the workspace is not moved.
				s.gitMembers(ws)
			}
			for _, e := range r.entries {
				p := filepath.Join(r.dir, e.Name())
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
		}
		if scan.Truncated {
			scan.Unlisted += len(next)
		}
		level = next
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

// PlantChange is one difference between two scans.
type PlantChange struct {
	Planted
	// Change is "created" or "changed".
	Change string `json:"change"`
}

// Planted compares a job's end scan (after) with its start scan (s) and
// returns what was created or changed, outermost first: a path inside a
// created git dir or hook dir is left out, the dir itself is reported.
// What was removed runs nothing and is not reported.
func (s RunsLaterScan) Planted(after RunsLaterScan) []PlantChange {
	var out []PlantChange
	keys := make([]string, 0, len(after.Items))
	for k := range after.Items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var created []string
	for _, k := range keys {
		it := after.Items[k]
		old, ok := s.Items[k]
		var change string
		switch {
		case !ok:
			change = "created"
		case old.Sum != it.Sum || old.What != it.What:
			change = "changed"
		default:
			continue
		}
		if insideAny(k, created) {
			continue
		}
		if change == "created" && onlyEmpty(k, after) {
			continue
		}
		if change == "created" && (it.Sum == "d" || it.Sum == "") {
			created = append(created, k)
		}
		out = append(out, PlantChange{Planted: it, Change: change})
	}
	return out
}

// onlyEmpty reports whether the item k of scan and everything recorded
// below it are empty (Planted.Empty): nothing there can run. A gitfile is
// never empty: even an empty one changes what the owner's git does there.
func onlyEmpty(k string, scan RunsLaterScan) bool {
	if it := scan.Items[k]; !it.Empty || it.What == "gitfile" {
		return false
	}
	for p, it := range scan.Items {
		if strings.HasPrefix(p, k+"/") && !it.Empty {
			return false
		}
	}
	return true
}

func insideAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// Quarantined is a planted path moved aside at a job's end.
type Quarantined struct {
	// Path is where it was, relative to the workspace.
	Path string `json:"path"`
	// What it is (Planted.What) and whether the job created or changed it.
	What   string `json:"what"`
	Change string `json:"change"`
	// MovedTo is where it is now, relative to the workspace; "" when it
	// could not be moved (Error says why: it is then still in place).
	MovedTo string `json:"moved_to,omitempty"`
	// Mode is the permission bits a moved file had before its exec bits
	// were taken ("" when it had none, or is not a file).
	Mode  string `json:"mode,omitempty"`
	Error string `json:"error,omitempty"`
}

// QuarantineSuffix is what a quarantined path's name gets, before the job id.
const QuarantineSuffix = ".quarantined-"

// Quarantine moves each change aside within its own directory, to
// <name>.quarantined-<tag> (tag: the job id), so that no git, hook manager
// or shell prompt picks it up, and takes a moved file's exec bits. It never
// follows a link: a planted link is moved as a link.
func Quarantine(workspace, tag string, changes []PlantChange) []Quarantined {
	out := make([]Quarantined, 0, len(changes))
	for _, c := range changes {
		q := Quarantined{Path: c.Path, What: c.What, Change: c.Change}
		src := filepath.Join(workspace, filepath.FromSlash(c.Path))
		st, err := os.Lstat(src)
		if err != nil {
			q.Error = err.Error()
			out = append(out, q)
			continue
		}
		dst := src + QuarantineSuffix + tag
		for i := 2; ; i++ {
			if _, err := os.Lstat(dst); os.IsNotExist(err) {
				break
			}
			dst = fmt.Sprintf("%s%s%s.%d", src, QuarantineSuffix, tag, i)
		}
		if err := os.Rename(src, dst); err != nil {
			q.Error = err.Error()
			out = append(out, q)
			continue
		}
		q.MovedTo = filepath.ToSlash(strings.TrimPrefix(dst, filepath.Clean(workspace)+string(filepath.Separator)))
		if st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			if err := os.Chmod(dst, st.Mode().Perm()&^0o111); err != nil {
				q.Error = "moved, but its exec bits stay: " + err.Error()
			} else {
				q.Mode = fmt.Sprintf("%04o", st.Mode().Perm())
			}
		}
		out = append(out, q)
	}
	return out
}

// RestoreHint is the command that puts a quarantined path back on purpose.
func (q Quarantined) RestoreHint() string {
	if q.MovedTo == "" {
		return ""
	}
	cmd := fmt.Sprintf("mv -T %s %s", shellQuote(q.MovedTo), shellQuote(q.Path))
	if q.Mode != "" {
		cmd += fmt.Sprintf(" && chmod %s %s", q.Mode, shellQuote(q.Path))
	}
	return cmd
}

func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil { // a NUL byte, which no file name holds
		return s
	}
	return q
}

// AuditResult is what a job's end-of-job audit found and did.
type AuditResult struct {
	Quarantined []Quarantined
	// Note says what the audit could not do ("" when it did everything).
	Note string
}

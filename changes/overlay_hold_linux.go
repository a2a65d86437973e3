package changes

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

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
// repository: the files its hooks dir's links lead to (the hooks dir is
// .git/hooks, or the common dir's of a linked worktree or submodule, whose
// .git is a gitfile), and its core.hooksPath (relative to the workspace's
// top) when that is inside the workspace.
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
	st, err := rd.lower.Lstat(".git")
	if err != nil {
		return nil
	}
	hooks := filepath.Join(rd.ws, ".git", "hooks")
	if kindOf(st.Mode) == "file" {
		// A gitfile: the hooks are in the common git dir, outside the workspace.
		b, err := git.run(rd.ws, "rev-parse", "--path-format=absolute", "--git-common-dir")
		if err != nil {
			return nil
		}
		hooks = filepath.Join(strings.TrimSpace(string(b)), "hooks")
	} else if kindOf(st.Mode) != "dir" {
		return nil
	}
	if entries, err := os.ReadDir(hooks); err == nil {
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := os.Readlink(filepath.Join(hooks, e.Name()))
			if err != nil {
				continue
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(hooks, target)
			}
			inside(target)
		}
	}
	if hp, err := git.config(rd.ws, "core.hooksPath"); err == nil && hp != "" {
		inside(hp)
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
	f, err := rd.cur.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// diffs is the unified diff of every change, the visible ones first, at
// most MaxDiffTotal in all (past it a file is not read). A deny path is
// never read; a secret file that existed shows only the lines the job
// added, never its earlier contents, and a file whose contents are those
// of a secret file the job removed or changed is not shown at all. A
// visible file the diff cannot show (too large, its earlier contents
// unreadable, past the bound) is held back: what lands is what is shown.
func (rd *reader) diffs(items []upperItem, chs []change) string {
	secrets := rd.secretLines(items, chs)
	var vis, held strings.Builder
	for i := range chs {
		c := &chs[i]
		var d string
		if vis.Len()+held.Len() >= MaxDiffTotal {
			if c.kind == "file" || c.kind == "" && c.Change.Change != Deleted {
				c.nodiff = "left out of the diff: the whole diff reached its 16 MiB bound"
				c.Note = joinNote(c.Note, c.nodiff)
			}
		} else {
			d = rd.diff(c, secrets)
			if vis.Len()+held.Len()+len(d) > MaxDiffTotal {
				d, c.nodiff = "", "left out of the diff: the whole diff reached its 16 MiB bound"
				c.Note = joinNote(c.Note, c.nodiff)
			}
		}
		if c.Held == "" && c.nodiff != "" && c.kind == "file" && c.Change.Change != Deleted {
			c.Held = HeldNoDiff
		}
		if c.Held != "" {
			held.WriteString(d)
		} else {
			vis.WriteString(d)
		}
	}
	return vis.String() + held.String()
}

// secretLines are the lines (of 8 bytes or more) of the secret files of
// the workspace the job touched: changed, removed, or in the upper dir at
// all (a hard link or an append copies a file up whole). They are read
// only to know them again elsewhere: a file the job wrote that holds one
// of them is not shown (a rename, a copy, a link of a secret file).
func (rd *reader) secretLines(items []upperItem, chs []change) map[string]string {
	lines := map[string]string{}
	add := func(rel string) {
		if _, deny := rd.deny.Denied(rd.ws, filepath.Join(rd.ws, filepath.FromSlash(rel))); deny {
			return
		}
		b, err := readSmall(rd.lower, rel, MaxDiffFile)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); len(l) >= 8 {
				lines[l] = rel
			}
		}
	}
	for _, it := range items {
		if (it.kind == "file" || it.kind == "whiteout") && sandbox.IsSecretName(path.Base(it.rel)) {
			add(it.rel)
		}
	}
	for _, c := range chs {
		if c.Secret && c.Change.Change == Deleted {
			add(c.Path)
		}
	}
	return lines
}

// holdsSecret is the secret file one of b's lines comes from ("": none).
func holdsSecret(b []byte, lines map[string]string) string {
	if len(lines) == 0 {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := lines[strings.TrimSpace(l)]; ok {
			return p
		}
	}
	return ""
}

func (rd *reader) diff(c *change, secrets map[string]string) string {
	if c.kind == "dir" || c.kind == "link" || c.kind == "special" {
		return ""
	}
	_, deny := rd.deny.Denied(rd.ws, filepath.Join(rd.ws, filepath.FromSlash(c.Path)))
	if deny {
		c.Note = joinNote(c.Note, denyNote)
		c.nodiff = denyNote
		return ""
	}
	var before, after []byte
	var err error
	if c.Change.Change != Created {
		if before, err = readSmall(rd.lower, c.Path, MaxDiffFile); err != nil {
			c.nodiff = "no diff: the earlier contents could not be read (" + err.Error() + ")"
			c.Note = joinNote(c.Note, c.nodiff)
			return ""
		}
	}
	if c.Change.Change != Deleted {
		if after, err = readSmall(rd.cur, c.Path, MaxDiffFile); err != nil {
			c.nodiff = "no diff: " + err.Error()
			c.Note = joinNote(c.Note, c.nodiff)
			return ""
		}
		if p := holdsSecret(after, secrets); p != "" && !c.Secret {
			c.Secret = true
			c.nodiff = "it holds what the secret file " + p + " held: not shown"
			c.Note = joinNote(c.Note, c.nodiff)
			return ""
		}
	}
	if c.Secret && c.Change.Change == Deleted {
		c.Note = joinNote(c.Note, "a secret file: its earlier contents are not shown")
		return header(c.Change)
	}
	if c.Binary {
		return binaryDiff(c.Change)
	}
	if !readable(before[:min(len(before), sniffBytes)]) {
		// Binary before, text now: the new text is shown whole.
		c.Note = joinNote(c.Note, "it was binary: the diff shows its new contents whole")
		shown := c.Change
		shown.Change = Created
		return unified(shown, "", string(after))
	}
	d := unified(c.Change, string(before), string(after))
	if d == "" && c.Change.Change == Created {
		return header(c.Change) // an empty new file
	}
	if c.Secret {
		c.Note = joinNote(c.Note, "a secret file: its earlier contents are not shown, only the lines the job added")
		return addedOnly(d)
	}
	return d
}

// addedOnly is a unified diff with only its headers and added lines: what
// the job wrote into a secret file, without the file's other lines.
func addedOnly(d string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(d, "\n") {
		switch {
		case strings.HasPrefix(l, "+"), strings.HasPrefix(l, "diff --git "), strings.HasPrefix(l, "---"),
			strings.HasPrefix(l, "@@"), l == "new file\n", l == "deleted file\n":
			b.WriteString(l)
		}
	}
	return b.String()
}

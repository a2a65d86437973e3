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
// repository: the files its .git/hooks links lead to, and its
// core.hooksPath when that is inside the workspace.
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
	if entries, err := rd.lower.ReadDir(".git/hooks", true); err == nil {
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := os.Readlink(filepath.Join(rd.ws, ".git", "hooks", e.Name()))
			if err != nil {
				continue
			}
			if !filepath.IsAbs(target) {
				target = path.Join(".git/hooks", filepath.ToSlash(target))
			}
			inside(target)
		}
	}
	if st, err := rd.lower.Lstat(".git"); err == nil && kindOf(st.Mode) == "dir" {
		if b, err := git.run(rd.ws, "config", "--get", "core.hooksPath"); err == nil {
			if hp := strings.TrimSpace(string(b)); hp != "" {
				inside(hp)
			}
		}
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
	f, err := rd.up.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, sniffBytes)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// diffs is the unified diff of every change, the visible ones first. A
// deny path is never read; a secret file that existed before shows only
// what the job wrote, never its earlier contents.
func (rd *reader) diffs(chs []change) string {
	var vis, held strings.Builder
	for i := range chs {
		c := &chs[i]
		d := rd.diff(c)
		if c.Held != "" {
			held.WriteString(d)
		} else {
			vis.WriteString(d)
		}
	}
	return vis.String() + held.String()
}

func (rd *reader) diff(c *change) string {
	if c.kind == "dir" || c.kind == "link" || c.kind == "special" {
		return ""
	}
	_, deny := rd.deny.Denied(rd.ws, filepath.Join(rd.ws, filepath.FromSlash(c.Path)))
	if deny {
		c.Note = joinNote(c.Note, denyNote)
		return ""
	}
	var before, after []byte
	var err error
	if c.Change.Change != Created {
		if c.Secret {
			c.Note = joinNote(c.Note, "a secret file: its earlier contents are not shown, only what the job wrote")
		} else if before, err = readSmall(rd.lower, c.Path, MaxDiffFile); err != nil {
			c.Note = joinNote(c.Note, "no diff: the earlier contents could not be read ("+err.Error()+")")
			return ""
		}
	}
	if c.Change.Change != Deleted {
		if after, err = readSmall(rd.up, c.Path, MaxDiffFile); err != nil {
			c.Note = joinNote(c.Note, "no diff: "+err.Error())
			return ""
		}
	}
	if c.Binary || !readable(before[:min(len(before), sniffBytes)]) {
		return binaryDiff(c.Change)
	}
	shown := c.Change
	if c.Secret && shown.Change == Modified {
		shown.Change = Created
	}
	return unified(shown, string(before), string(after))
}

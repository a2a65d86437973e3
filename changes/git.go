package changes

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitTimeout bounds each git command the record runs.
const gitTimeout = 10 * time.Second

// gitArgs start every git command: no fsmonitor, no hooks, no pager, no
// optional locks (git status does not rewrite the index), nothing fetched.
// The daemon runs git outside every sandbox, so it runs only what reads:
// rev-parse, status and ls-files at the start, cat-file at the end (after
// the audit has moved aside any git config or hook the job planted).
var gitArgs = []string{
	"-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never",
	"-c", "core.untrackedCache=false", "--no-pager", "--no-optional-locks",
}

// git runs git in ws with its own git dir and returns its stdout.
func git(ws string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, gitArgs...), args...)...)
	cmd.Dir = ws
	// git looks for the repository no higher than the workspace.
	cmd.Env = append(gitEnv(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(ws))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}

// gitEnv is the daemon's PATH and HOME, and nothing that points git
// elsewhere.
func gitEnv() []string {
	env := []string{"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C"}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// gitStart asks git about ws when ws is the top of a git work tree (its
// .git a directory, or a gitfile as in a worktree or submodule; never a
// link): HEAD, the dirty paths, and the object id of every tracked file
// (path → id). It returns nil when ws is not one; a git that fails is
// recorded as the state's Error, and every file is then copied.
func gitStart(ws string) (*GitState, map[string]string) {
	st, err := os.Lstat(filepath.Join(ws, ".git"))
	if err != nil || !(st.IsDir() || st.Mode().IsRegular()) {
		return nil, nil
	}
	g := &GitState{}
	fail := func(err error) (*GitState, map[string]string) {
		g.Error, g.Dirty = err.Error(), nil
		return g, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fail(errors.New("git is not on the daemon's PATH"))
	}
	top, err := git(ws, "rev-parse", "--show-toplevel")
	if err != nil {
		return fail(err)
	}
	if t := strings.TrimSpace(string(top)); !sameDir(t, ws) {
		return fail(fmt.Errorf("the work tree's top is %s, not the workspace", t))
	}
	if head, err := git(ws, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		g.Head = strings.TrimSpace(string(head))
	}
	status, err := git(ws, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return fail(err)
	}
	for _, rec := range strings.Split(string(status), "\x00") {
		if len(rec) > 3 {
			g.Dirty = append(g.Dirty, rec[3:])
		}
	}
	staged, err := git(ws, "ls-files", "-s", "-z")
	if err != nil {
		return fail(err)
	}
	tracked := map[string]string{}
	for _, rec := range strings.Split(string(staged), "\x00") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if ok && len(f) == 3 && f[2] == "0" && strings.HasPrefix(f[0], "100") {
			tracked[path] = f[1]
		}
	}
	return g, tracked
}

// blob reads a git object of ws by id and checks that its contents hash to
// that id, so an object the job rewrote cannot pass for the old contents.
func blob(ws, id string, limit int64) ([]byte, error) {
	out, err := git(ws, "cat-file", "blob", id)
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errTooLarge
	}
	var h hash.Hash
	switch len(id) {
	case 40:
		h = sha1.New()
	case 64:
		h = sha256.New()
	default:
		return nil, fmt.Errorf("object id %q of an unknown hash", id)
	}
	fmt.Fprintf(h, "blob %d\x00", len(out))
	h.Write(out)
	if hex.EncodeToString(h.Sum(nil)) != id {
		return nil, fmt.Errorf("object %s does not hold what its id says: it was changed since the start", id)
	}
	return out, nil
}

func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// openNoFollow opens p for reading unless it is a symlink (or was swapped
// for one between the check and the open).
func openNoFollow(p string) (*os.File, error) {
	before, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, errors.New("the file changed while it was opened")
	}
	return f, nil
}

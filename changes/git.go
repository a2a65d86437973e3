package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// gitTimeout bounds each git command the record runs.
const gitTimeout = 10 * time.Second

// gitArgs start every git command: no fsmonitor, no hooks, no pager, no
// optional locks (the index is never rewritten), nothing fetched. The
// daemon runs git outside every sandbox, so it runs only what reads and
// runs no program a config names: rev-parse and ls-files at the start,
// cat-file blob at the end (after the audit has moved aside any git config
// or hook the job planted).
// A repository's own protocol.<name>.allow beats protocol.allow, so the
// environment (GIT_ALLOW_PROTOCOL, GIT_NO_LAZY_FETCH: Git.env) is what keeps
// a partial clone's lazy fetch from running the upload-pack its config
// names; diff.submodule=short keeps a diff from running a child git diff in
// a submodule under that submodule's own config.
var gitArgs = []string{
	"-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never",
	"-c", "protocol.file.allow=never", "-c", "protocol.ext.allow=never", "-c", "diff.submodule=short",
	"-c", "core.untrackedCache=false", "--no-pager", "--no-optional-locks",
}

// Git is the git the daemon runs, outside every sandbox. The daemon finds
// it once, on its PATH without the directories a job can write
// (harness.TrustedLook), never on the PATH as it is: a PATH entry inside a
// workspace (an activated .venv/bin) would let a job plant the git the
// daemon runs.
type Git struct {
	// Bin is git's absolute path ("": git was not found; none is run).
	Bin string
	// Path is the PATH git runs with: the daemon's without the directories
	// a job can write (harness.TrustedPath).
	Path string
}

// run runs git in ws with its own git dir and returns its stdout.
func (g Git) run(ws string, args ...string) ([]byte, error) {
	return g.runIn(ws, nil, args...)
}

// runIn is run with stdin (nil: none).
func (g Git) runIn(ws string, stdin []byte, args ...string) ([]byte, error) {
	return g.runAt(ws, true, stdin, args...)
}

// runAt is runIn; with ceiling false git looks for the repository above
// the workspace too (for a workspace that is a folder of one).
func (g Git) runAt(ws string, ceiling bool, stdin []byte, args ...string) ([]byte, error) {
	return g.runCapped(ws, ceiling, stdin, maxGitOutput, args...)
}

// maxGitOutput bounds what the daemon keeps of one git command's output.
const maxGitOutput = 256 << 20

// runCapped is runAt, keeping at most limit bytes of git's output: past
// them git's next write fails, and so does the call.
func (g Git) runCapped(ws string, ceiling bool, stdin []byte, limit int64, args ...string) ([]byte, error) {
	if !filepath.IsAbs(g.Bin) {
		return nil, errNoGit
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.Bin, append(append([]string{}, gitArgs...), args...)...)
	cmd.Dir = ws
	// git looks for the repository no higher than the workspace.
	cmd.Env = g.env()
	if ceiling {
		cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(ws))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := &cappedBuffer{limit: limit}
	cmd.Stdout = stdout
	err := cmd.Run()
	out := stdout.Bytes()
	if stdout.over {
		return out, fmt.Errorf("git %s: %w: more than %d MiB of output", args[0], errTooLarge, limit>>20)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return out, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}

// config is the value of the repository's config key (empty when unset),
// read by `git config --get`, which runs no program. It runs without
// gitArgs' core.hooksPath override, which it would otherwise answer.
func (g Git) config(ws, key string) (string, error) {
	if !filepath.IsAbs(g.Bin) {
		return "", errNoGit
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.Bin, "--no-pager", "--no-optional-locks", "config", "--get", key)
	cmd.Dir = ws
	cmd.Env = append(g.env(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(ws))
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", nil // not set
	}
	return strings.TrimSpace(string(out)), err
}

// errNoGit: the daemon found no git on its trusted PATH.
var errNoGit = errors.New("git is not on the daemon's PATH (outside the directories a job can write)")

// env is the trusted PATH, the daemon's HOME, and nothing that points git
// elsewhere.
func (g Git) env() []string {
	env := []string{"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "GIT_NO_LAZY_FETCH=1", "GIT_ALLOW_PROTOCOL=none",
		"LC_ALL=C", "PATH=" + g.Path}
	if v, ok := os.LookupEnv("HOME"); ok {
		env = append(env, "HOME="+v)
	}
	return env
}

// gitStart asks git about ws when ws is the top of a git work tree (its
// .git a directory, or a gitfile as in a worktree or submodule; never a
// link): HEAD, and for each tracked file of files (the start's manifest)
// that is clean — its size and mtime those the index recorded, and not
// racily so — its object id (path → id); the others are Dirty. It never
// runs `git status`, which runs the repository's clean filters (a program
// a config names) on files whose stat changed: the daemon runs git outside
// every sandbox. It returns nil when ws is not a work tree's top; a git
// that fails is recorded as the state's Error, and every file is then
// copied.
func gitStart(git Git, ws string, files []sandbox.FileEntry) (*GitState, map[string]string) {
	st, err := os.Lstat(filepath.Join(ws, ".git"))
	if err != nil || !(st.IsDir() || st.Mode().IsRegular()) {
		return nil, nil
	}
	g := &GitState{}
	fail := func(err error) (*GitState, map[string]string) {
		g.Error, g.Dirty = err.Error(), nil
		return g, nil
	}
	if git.Bin == "" {
		return fail(errNoGit)
	}
	out, err := git.run(ws, "rev-parse", "--show-toplevel", "--git-path", "index")
	if err != nil {
		return fail(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !sameDir(lines[0], ws) {
		return fail(fmt.Errorf("the work tree's top is %q, not the workspace", lines[0]))
	}
	index := lines[1]
	if !filepath.IsAbs(index) {
		index = filepath.Join(ws, index)
	}
	ist, err := os.Stat(index)
	if err != nil {
		return fail(fmt.Errorf("the index: %w", err))
	}
	if head, err := git.run(ws, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		g.Head = strings.TrimSpace(string(head))
	}
	staged, err := git.run(ws, "ls-files", "-s", "--debug", "-z")
	if err != nil {
		return fail(err)
	}
	now := make(map[string]sandbox.FileEntry, len(files))
	for _, f := range files {
		now[f.Path] = f
	}
	clean := map[string]string{}
	for _, e := range parseStaged(string(staged)) {
		f, ok := now[e.path]
		switch {
		case !ok:
		case f.Size == e.size && f.ModTime == e.mtime && e.mtime < ist.ModTime().UnixNano():
			clean[e.path] = e.oid
		default:
			g.Dirty = append(g.Dirty, e.path)
		}
	}
	return g, clean
}

// staged is one entry of the index: a regular file at stage 0, with the
// size and mtime the index recorded for it.
type staged struct {
	path, oid string
	size      int64
	mtime     int64 // Unix nanoseconds
}

// debugLines is how many lines `ls-files --debug` prints for each entry:
// ctime, mtime, dev/ino, uid/gid, size/flags.
const debugLines = 5

// parseStaged reads `git ls-files -s --debug -z`: each entry is
// "<mode> <object> <stage>\t<path>\0" followed by indented lines, among them
// "  mtime: S:NS" and "  size: N\tflags: F".
func parseStaged(out string) []staged {
	var entries []staged
	parts := strings.Split(out, "\x00")
	header := parts[0]
	for _, part := range parts[1:] {
		// Each entry's debug block is exactly debugLines lines; what
		// follows is the next entry's header, whose path may itself hold
		// newlines (a name must never pass for another entry's stat).
		at := 0
		for range debugLines {
			j := strings.IndexByte(part[at:], '\n')
			if j < 0 {
				return entries // not git's debug format: trust no more of it
			}
			at += j + 1
		}
		debug, next := part[:at], part[at:]
		if e, ok := parseEntry(header, debug); ok {
			entries = append(entries, e)
		}
		header = next
	}
	return entries
}

func parseEntry(header, debug string) (staged, bool) {
	meta, path, ok := strings.Cut(header, "\t")
	f := strings.Fields(meta)
	if !ok || len(f) != 3 || f[2] != "0" || !strings.HasPrefix(f[0], "100") {
		return staged{}, false
	}
	e := staged{path: path, oid: f[1], size: -1, mtime: -1}
	for _, line := range strings.Split(debug, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "mtime: "); ok {
			sec, nsec, _ := strings.Cut(v, ":")
			s, err1 := strconv.ParseInt(sec, 10, 64)
			ns, err2 := strconv.ParseInt(nsec, 10, 64)
			if err1 == nil && err2 == nil {
				e.mtime = s*1e9 + ns
			}
		}
		if v, ok := strings.CutPrefix(line, "size: "); ok {
			size, _, _ := strings.Cut(v, "\t")
			if n, err := strconv.ParseInt(size, 10, 64); err == nil {
				e.size = n
			}
		}
	}
	return e, e.size >= 0 && e.mtime >= 0
}

// blob reads a git object of ws by id and checks that its contents hash to
// that id, so an object the job rewrote cannot pass for the old contents.
func blob(git Git, ws, id string, limit int64) ([]byte, error) {
	out, err := git.run(ws, "cat-file", "blob", id)
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errTooLarge
	}
	if len(id) != 40 && len(id) != 64 {
		return nil, fmt.Errorf("object id %q of an unknown hash", id)
	}
	if blobID(id, out) != id {
		return nil, fmt.Errorf("object %s does not hold what its id says: it was changed since the start", id)
	}
	return out, nil
}

func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// ignored are those of paths (slash-separated, relative to ws) that git
// would not show because the repository's ignore rules match them (`git
// check-ignore`, which reads the ignore files and runs nothing). It does not
// read the index (--no-index): a tracked file that an ignore rule matches
// counts as ignored, so it is held rather than landed, and a 200,000-file
// repository's index is not read at every job's end (about 90 ms of the
// record's 100). Outside a work tree's top, nothing is.
func (g Git) ignored(ws string, paths []string) (map[string]bool, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	// The workspace's own repository, or one it is a folder of (whose
	// ignore rules `git status` there obeys too).
	ceiling := true
	if st, err := os.Lstat(filepath.Join(ws, ".git")); err != nil || !(st.IsDir() || st.Mode().IsRegular()) {
		out, err := g.runAt(ws, false, nil, "rev-parse", "--is-inside-work-tree")
		if err != nil || strings.TrimSpace(string(out)) != "true" {
			return nil, nil // in no work tree: nothing is ignored
		}
		ceiling = false
	}
	var in bytes.Buffer
	// Each path is asked as ./path: a name the job chose, such as ":!x",
	// is then a name, not pathspec magic that makes git refuse them all.
	for _, p := range paths {
		in.WriteString("./" + p)
		in.WriteByte(0)
	}
	out, err := g.runAt(ws, ceiling, in.Bytes(), "check-ignore", "--no-index", "-z", "--stdin")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, err
	}
	got := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			got[strings.TrimPrefix(p, "./")] = true
		}
	}
	return got, nil
}

// cappedBuffer keeps at most limit bytes; a write past them fails.
type cappedBuffer struct {
	bytes.Buffer
	limit int64
	over  bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.limit {
		b.over = true
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

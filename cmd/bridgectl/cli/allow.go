package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/harness"
)

var allowCmd = &Command{
	Name:  "allow",
	Usage: "allow [DIR] [--remove] [--force] [--reload]",
	Short: "grant (or --remove) a root that agent workspaces may lie in",
	Long: `Without DIR: lists DEEPSEEK_ALLOWED_ROOTS. With DIR: resolves it (absolute,
symlinks followed; it must be an existing directory), adds it to
DEEPSEEK_ALLOWED_ROOTS in .env (every other line kept) and reloads a running
daemon. --remove takes it out again.

A reload ends every unfinished agent job (queued, running, waiting for
approval) as interrupted. So while the daemon has such jobs, allow writes .env
but does NOT reload: it names the jobs, and the daemon keeps its old roots
until ` + "`bridgectl reload`" + ` (run it when they are done). --reload reloads
anyway, interrupting them (they are named).

Broad roots are refused unless --force: /, /home, /root, /Users, your home
directory, /tmp, /var, /usr, /etc, /opt, system directories, a drive root such as
C:\ and the like — an agent could then work anywhere in them. A root that
contains the bridge's state directory or its .env file is always refused: a job
must never reach the approval queue or the API key. A root that holds the
bridge binary or Claude Code is allowed with a warning: the daemon refuses a
workspace that holds either (a job could replace a program that runs outside
the sandbox), but the root's other subdirectories stay usable. So is a root
that holds a directory on the daemon's PATH (the running daemon's, else
yours), such as a project's .venv/bin: the daemon leaves it out of the
harness's PATH, but the daemon and your shell still run what a job writes
there.`,
	Run: runAllow,
}

func runAllow(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	remove := f.Bool("remove", false, "remove DIR from the allowed roots")
	force := f.Bool("force", false, "allow a broad root such as your home directory")
	reload := f.Bool("reload", false, "reload the daemon even if that interrupts unfinished jobs")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"allow takes one DIR"}
	}
	c, err := f.loadCreatingEnv()
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		if *remove {
			return usageError{"allow --remove needs the DIR to remove"}
		}
		if *reload {
			return usageError{"allow --reload goes with a DIR to allow or --remove (to reload alone: bridgectl reload)"}
		}
		if len(c.cfg.AllowedRoots) == 0 {
			fmt.Fprintln(e.Stdout, "no allowed roots: every agent workspace is refused; `bridgectl allow DIR` grants one")
			return nil
		}
		for _, r := range c.cfg.AllowedRoots {
			fmt.Fprintln(e.Stdout, r)
		}
		return nil
	}
	roots := append([]string(nil), c.cfg.AllowedRoots...)
	var dir string
	if *remove {
		dir, _ = filepath.Abs(pos[0])
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		kept := roots[:0]
		found := false
		for _, r := range roots {
			if sameDir(r, dir) || sameDir(r, pos[0]) {
				found = true
				continue
			}
			kept = append(kept, r)
		}
		if !found {
			return fmt.Errorf("%s is not an allowed root (see `bridgectl allow`)", dir)
		}
		roots = kept
	} else {
		dir, err = c.checkRoot(pos[0], *force)
		if err != nil {
			return err
		}
		for _, r := range roots {
			if sameDir(r, dir) {
				fmt.Fprintf(e.Stdout, "%s is already allowed\n", dir)
				return nil
			}
		}
		roots = append(roots, dir)
	}
	if err := c.setEnv("DEEPSEEK_ALLOWED_ROOTS", strings.Join(roots, string(os.PathListSeparator))); err != nil {
		return err
	}
	if c.overriddenByEnv("DEEPSEEK_ALLOWED_ROOTS") {
		fmt.Fprintln(e.Stderr, "warning: DEEPSEEK_ALLOWED_ROOTS is also set in the environment, which wins over .env: unset it, or this change has no effect")
	}
	if *remove {
		fmt.Fprintf(e.Stdout, "removed %s from DEEPSEEK_ALLOWED_ROOTS in %s\n", dir, c.envPath)
	} else {
		fmt.Fprintf(e.Stdout, "allowed %s (DEEPSEEK_ALLOWED_ROOTS in %s)\n", dir, c.envPath)
		for _, h := range c.heldBy(dir) {
			fmt.Fprintf(e.Stderr, "warning: %s\n", h.warning(dir))
		}
		path, whose := c.daemonPath()
		for _, d := range pathDirsIn(dir, path) {
			fmt.Fprintf(e.Stderr, "warning: %s: %s\n", dir, pathWarning(d, whose))
		}
	}
	if err := c.reread(); err != nil {
		return err
	}
	if d := c.daemon(ctx); d.PID != 0 && !*reload {
		if open := c.unfinishedJobs(); len(open) > 0 {
			are, them, they := "are", "them", "they are"
			if len(open) == 1 {
				are, them, they = "is", "it", "it is"
			}
			fmt.Fprintf(e.Stdout, "NOT reloaded: %s %s not finished, and a reload would interrupt %s:\n", countJobs(len(open)), are, them)
			printJobLines(e.Stdout, open)
			fmt.Fprintf(e.Stdout, "the daemon (pid %d) keeps the old roots until it reloads: run `bridgectl reload` when %s done (`bridgectl jobs` shows the jobs); `bridgectl reload` now, or allow with --reload, interrupts %s\n", d.PID, they, them)
			return nil
		}
	}
	d, iw, err := c.reloadDaemon(ctx)
	if iw != nil {
		defer c.reportInterrupted(*iw) // after what is said below
	}
	switch {
	case errors.Is(err, errNotRunning):
		fmt.Fprintln(e.Stdout, "the daemon is not running; the change applies at `bridgectl start`")
	case err != nil:
		return fmt.Errorf(".env is updated but the reload failed: %w", err)
	default:
		fmt.Fprintf(e.Stdout, "reloaded: pid %d\n", d.PID)
	}
	return nil
}

func sameDir(a, b string) bool {
	ca, cb := filepath.Clean(a), filepath.Clean(b)
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		return strings.EqualFold(ca, cb)
	}
	return ca == cb
}

// checkRoot resolves dir and refuses what must not become a root.
func (c *ctl) checkRoot(arg string, force bool) (string, error) {
	abs, err := filepath.Abs(c.expandHome(arg))
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w (the directory must exist)", arg, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	if strings.ContainsAny(real, string(os.PathListSeparator)+";") {
		return "", fmt.Errorf("%s contains %q or \";\", which separate DEEPSEEK_ALLOWED_ROOTS: rename or pick another directory", real, string(os.PathListSeparator))
	}
	if why := broadRoot(real, c.home()); why != "" && !force {
		return "", fmt.Errorf("refused: %s is %s, so an agent could work anywhere in it; allow a project directory instead, or pass --force if you really mean it", real, why)
	}
	for _, p := range []struct{ path, what string }{{c.dir.Root, "the bridge's state directory"}, {c.envPath, "the .env file with the API key"}} {
		target := p.path
		if r, err := filepath.EvalSymlinks(target); err == nil {
			target = r
		}
		if within(real, target) {
			return "", fmt.Errorf("refused: %s contains %s (%s); a job must never reach it — pick a narrower directory, or move it (BRIDGE_STATE_DIR / --env)", real, p.what, target)
		}
	}
	if state := c.dir.Root; within(state, real) {
		return "", fmt.Errorf("refused: %s is inside the bridge's state directory %s; a job must never reach it — pick a directory outside", real, state)
	}
	return real, nil
}

// heldPath is a path the daemon protects that lies in an allowed root.
type heldPath struct {
	path, what string
	// refused: allow refuses a root that holds it (the state dir, the .env);
	// for the binaries it only warns.
	refused bool
}

// warning says what a root that holds h means for workspaces.
func (h heldPath) warning(root string) string {
	s := fmt.Sprintf("%s holds %s (%s): the daemon refuses %s itself, and every directory in it that holds that path, as a workspace; subdirectories that do not hold it stay usable", root, h.path, h.what, root)
	if h.refused {
		s += fmt.Sprintf(". `bridgectl allow` refuses such a root: `bridgectl allow --remove %s`, then allow a narrower directory", root)
	}
	return s
}

// heldBy lists the protected paths inside root, as the daemon's workspace
// admission sees them (sandbox.AdmitWorkspace: a path and its resolved form):
// the state dir, the .env file, the bridge binary (it runs every job's
// approval child outside the sandbox) and Claude Code (it runs every job).
func (c *ctl) heldBy(root string) []heldPath {
	roots := []string{filepath.Clean(root)}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		roots = append(roots, r)
	}
	cands := []heldPath{
		{c.dir.Root, "the bridge's state directory", true},
		{c.envPath, "the .env file with the API key", true},
	}
	if b, err := findBridge(c.e); err == nil {
		if abs, err := filepath.Abs(b); err == nil {
			cands = append(cands, heldPath{abs, "the bridge binary, which runs every job's approval child outside the sandbox", false})
		}
	}
	if h := c.findHarness(); h != "" {
		if abs, err := filepath.Abs(h); err == nil {
			cands = append(cands, heldPath{abs, "the Claude Code binary, which runs every job outside the sandbox", false})
		}
	}
	var out []heldPath
	for _, h := range cands {
		forms := []string{filepath.Clean(h.path)}
		if r, err := filepath.EvalSymlinks(h.path); err == nil {
			forms = append(forms, r)
		}
	found:
		for _, r := range roots {
			for _, f := range forms {
				if within(r, f) {
					out = append(out, h)
					break found
				}
			}
		}
	}
	return out
}

// daemonPath is the PATH the daemon runs with, and whose it is: the running
// daemon's (daemon.json "path"), else bridgectl's own, which `bridgectl
// start` hands the daemon.
func (c *ctl) daemonPath() (path, whose string) {
	if s := c.daemonProc(); s.Info != nil && s.Info.Path != "" {
		return s.Info.Path, "the daemon's PATH"
	}
	path, _ = c.e.Getenv("PATH")
	return path, "your PATH (the one `bridgectl start` hands the daemon)"
}

// pathDirsIn lists the directories of the PATH value path that root holds
// (equals or contains, also after resolving links) — what the daemon drops
// from its harness's PATH (harness.TrustedPath), spelled as PATH has them.
func pathDirsIn(root, path string) []string {
	_, dropped := harness.TrustedPath(path, []string{root})
	var out []string
	for _, d := range dropped {
		if d.Untrusted != "" && !slices.Contains(out, d.Entry) {
			out = append(out, d.Entry)
		}
	}
	return out
}

// pathWarning says what a root that holds d, a directory on the daemon's
// PATH, means.
func pathWarning(d, whose string) string {
	return fmt.Sprintf("a job in this root could write a program into %s, which is on %s; the bridge drops %s from its harness's PATH, but the daemon and your own shell still run what is there — remove it from the PATH the daemon starts with", d, whose, d)
}

// expandHome reads a leading ~ as the home, as a shell would: a path typed
// at setup's prompt, or quoted, reaches bridgectl unexpanded.
func (c *ctl) expandHome(p string) string {
	if h := c.home(); h != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(h, strings.TrimPrefix(p, "~"))
	}
	return p
}

func (c *ctl) home() string {
	if h, ok := c.e.Getenv("HOME"); ok && h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// within reports whether p is root or inside it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// broadRoot says why dir is too broad to be a root ("" if it is not).
func broadRoot(dir, home string) string {
	clean := filepath.Clean(dir)
	if clean == filepath.VolumeName(clean)+string(filepath.Separator) || filepath.Dir(clean) == clean {
		return "a filesystem root"
	}
	if home != "" {
		h := filepath.Clean(home)
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		if sameDir(clean, h) {
			return "your home directory"
		}
		if within(clean, h) {
			return "a parent of your home directory"
		}
	}
	broad := []string{
		"/home", "/root", "/Users", "/tmp", "/var", "/var/tmp", "/usr", "/etc", "/opt", "/bin", "/sbin",
		"/lib", "/lib64", "/boot", "/dev", "/proc", "/sys", "/srv", "/mnt", "/media", "/run", "/snap",
		"/private", "/private/tmp", "/private/var", "/System", "/Library", "/Applications", "/Volumes",
	}
	for _, b := range broad {
		if sameDir(clean, b) {
			return "a system-wide directory"
		}
	}
	if t := os.TempDir(); sameDir(clean, t) {
		return "the temporary directory"
	}
	if runtime.GOOS == "windows" {
		vol := filepath.VolumeName(clean)
		for _, b := range []string{`\Users`, `\Windows`, `\Program Files`, `\Program Files (x86)`, `\ProgramData`} {
			if strings.EqualFold(clean, vol+b) {
				return "a system-wide directory"
			}
		}
	}
	return ""
}

// Package sandbox is path admission against a workspace and the OS sandbox
// settings for the harness: it decides whether a path a job names lies inside
// its workspace (after symlinks, "..", globs and hard links are accounted for),
// whether a directory may be a workspace at all, and what Claude Code's own
// bubblewrap sandbox must be told for one job.
//
// Admission fails closed: anything it cannot resolve, or that resolves outside
// the workspace under any of the interpretations a tool might use, is outside.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Decision is the verdict of path admission.
type Decision struct {
	// Inside is true only when every interpretation of the path lies inside the
	// workspace and outside every protected path.
	Inside bool
	// Resolved is the absolute path after symlinks (best effort; it is empty
	// when the path could not be resolved at all).
	Resolved string
	// Reason says why the path is outside (or "inside the workspace").
	Reason string
	// Protected is true when the path resolves into a protected path (the
	// state dir, the daemon's .env): no human should be asked, it is denied.
	Protected bool
}

// Guard admits paths against one workspace. Protected lists paths a job must
// never reach even if they were somehow inside the workspace: the bridge's
// state dir and the daemon's .env file.
type Guard struct {
	Workspace string
	Protected []string
}

// Admit admits path against workspace with no protected paths. Relative paths
// are relative to the workspace.
func Admit(workspace, path string) Decision {
	return Guard{Workspace: workspace}.Admit(path)
}

// maxLinkHops bounds symlink chains like the kernel's ELOOP limit does.
const maxLinkHops = 40

var errTooManyLinks = errors.New("too many levels of symbolic links")

// ErrWorkspace marks a refused workspace; the message says why and what to do.
var ErrWorkspace = errors.New("workspace refused")

// globMeta are the characters that make a path a glob pattern.
const globMeta = "*?[{"

// Admit decides whether path lies inside the guard's workspace.
//
// Rules, all of which must hold for Inside:
//   - the path is not empty and does not start with "~" (tools expand it to a
//     home directory, which is never the workspace);
//   - the path is resolved component by component, following symlinks (also an
//     intermediate directory, and a dangling link a write would create through),
//     with the longest existing prefix resolved and the not-yet-existing rest
//     appended; it is also cleaned lexically first and resolved again, because
//     a tool may clean "link/.." before the kernel sees it. Every one of these
//     readings must land inside the resolved workspace;
//   - a glob pattern (containing one of * ? [ {) is expanded into its brace
//     alternatives, and each is admitted by its non-glob prefix directory; a
//     pattern with ".." anywhere, an alternative that is absolute outside,
//     home-relative, or has a component that can match ".." (".*", ".?",
//     ".[…]", or ".." assembled from braces) is outside;
//   - no reading lands on or under a protected path;
//   - an existing regular file with more than one hard link is outside with
//     reason "hard link": the same inode may be reachable from outside the
//     workspace, and path checks cannot tell. A human decides.
func (g Guard) Admit(path string) Decision {
	ws := g.Workspace
	if ws == "" || !filepath.IsAbs(ws) {
		return Decision{Reason: fmt.Sprintf("workspace %q is not an absolute path", ws)}
	}
	if _, err := filepath.EvalSymlinks(ws); err != nil {
		return Decision{Reason: fmt.Sprintf("workspace %s cannot be resolved: %v", ws, err)}
	}
	switch {
	case path == "":
		return Decision{Reason: "empty path"}
	case strings.ContainsRune(path, 0):
		return Decision{Reason: "path contains a NUL byte"}
	case strings.HasPrefix(path, "~"):
		return Decision{Reason: fmt.Sprintf("%s is relative to a home directory, outside the workspace", path)}
	}

	if strings.ContainsAny(path, globMeta) {
		return g.admitGlob(path)
	}
	return g.admitPath(path)
}

// maxBraceAlternatives bounds the brace expansion of one glob pattern.
const maxBraceAlternatives = 256

// admitGlob admits a glob pattern: every brace alternative must be free of
// ".." (also one a pattern like ".*" could match) and its non-glob prefix
// directory must be admitted.
func (g Guard) admitGlob(pattern string) Decision {
	if strings.Contains(pattern, "..") {
		return Decision{Reason: fmt.Sprintf("glob pattern %s contains \"..\"", pattern)}
	}
	for _, bad := range []string{"{/", ",/", "{~", ",~"} {
		if strings.Contains(pattern, bad) {
			return Decision{Reason: fmt.Sprintf("glob pattern %s has an alternative outside the workspace", pattern)}
		}
	}
	alts, ok := expandBraces(pattern, maxBraceAlternatives)
	if !ok {
		return Decision{Reason: fmt.Sprintf("glob pattern %s has too many brace alternatives", pattern)}
	}
	var first Decision
	for i, alt := range alts {
		if strings.HasPrefix(alt, "~") {
			return Decision{Reason: fmt.Sprintf("glob pattern %s has an alternative relative to a home directory", pattern)}
		}
		for _, comp := range strings.Split(alt, string(filepath.Separator)) {
			if comp == ".." || len(comp) > 1 && comp[0] == '.' && strings.IndexByte(globMeta, comp[1]) >= 0 {
				return Decision{Reason: fmt.Sprintf("glob pattern %s can match \"..\"", pattern)}
			}
		}
		d := g.admitPath(globPrefix(alt))
		if !d.Inside {
			d.Reason = fmt.Sprintf("glob pattern %s: %s", pattern, d.Reason)
			return d
		}
		if i == 0 {
			first = d
		}
	}
	return first
}

// expandBraces expands {a,b} alternatives (nested too); a brace group
// without a top-level comma stays literal. ok is false past max results.
func expandBraces(p string, max int) ([]string, bool) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth != 0 {
				continue
			}
			var parts []string
			d, start := 0, open+1
			for j := open + 1; j < i; j++ {
				switch p[j] {
				case '{':
					d++
				case '}':
					d--
				case ',':
					if d == 0 {
						parts = append(parts, p[start:j])
						start = j + 1
					}
				}
			}
			if parts == nil {
				continue // no comma: literal braces
			}
			parts = append(parts, p[start:i])
			var out []string
			for _, part := range parts {
				sub, ok := expandBraces(p[:open]+part+p[i+1:], max)
				if !ok || len(out)+len(sub) > max {
					return nil, false
				}
				out = append(out, sub...)
			}
			return out, true
		}
	}
	return []string{p}, true
}

func (g Guard) admitPath(path string) Decision {
	ws := g.Workspace
	wsResolved, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return Decision{Reason: fmt.Sprintf("workspace %s cannot be resolved: %v", ws, err)}
	}
	glob := false

	protected := g.protectedForms()

	// The readings a tool or the kernel might give the path.
	var readings []string
	phys, err := resolveFrom(wsResolved, path, new(int))
	if err != nil {
		return Decision{Reason: fmt.Sprintf("%s cannot be resolved: %v", path, err)}
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(wsResolved, path)
	}
	lex, err := resolveFrom("/", filepath.Clean(abs), new(int))
	if err != nil {
		return Decision{Reason: fmt.Sprintf("%s cannot be resolved: %v", path, err)}
	}
	readings = append(readings, lex, phys)
	if !filepath.IsAbs(path) && ws != wsResolved {
		asGiven, err := resolveFrom("/", filepath.Join(ws, path), new(int))
		if err != nil {
			return Decision{Reason: fmt.Sprintf("%s cannot be resolved: %v", path, err)}
		}
		readings = append(readings, asGiven)
	}

	for _, r := range readings {
		for _, p := range protected {
			if within(r, p) {
				reason := fmt.Sprintf("%s resolves to %s, a protected path of the bridge", path, r)
				if filepath.Clean(abs) == r {
					reason = fmt.Sprintf("%s is a protected path of the bridge", r)
				}
				return Decision{Resolved: r, Protected: true, Reason: reason}
			}
		}
	}
	for _, r := range readings {
		if !within(r, wsResolved) {
			reason := fmt.Sprintf("%s resolves to %s, outside the workspace %s", path, r, wsResolved)
			if within(filepath.Clean(abs), wsResolved) || within(filepath.Clean(abs), filepath.Clean(ws)) {
				reason = fmt.Sprintf("%s escapes the workspace through a symlink (resolves to %s)", path, r)
			}
			return Decision{Resolved: r, Reason: reason}
		}
	}
	if !glob {
		if n, ok := hardLinks(lex); ok && n > 1 {
			return Decision{Resolved: lex,
				Reason: fmt.Sprintf("hard link: %s has %d links, so the same file may be reachable from outside the workspace", path, n)}
		}
	}
	return Decision{Inside: true, Resolved: lex, Reason: "inside the workspace"}
}

// protectedForms returns every protected path both as given (cleaned) and resolved.
func (g Guard) protectedForms() []string {
	var out []string
	for _, p := range g.Protected {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		out = append(out, filepath.Clean(p))
		if r, err := resolveFrom("/", p, new(int)); err == nil && r != filepath.Clean(p) {
			out = append(out, r)
		}
	}
	return out
}

// globPrefix returns the components of pattern before the first one holding a
// glob meta character ("." when there are none, "/" for an absolute pattern).
func globPrefix(pattern string) string {
	parts := strings.Split(pattern, string(filepath.Separator))
	var keep []string
	for _, p := range parts {
		if strings.ContainsAny(p, globMeta) {
			break
		}
		keep = append(keep, p)
	}
	prefix := strings.Join(keep, string(filepath.Separator))
	switch {
	case prefix == "" && filepath.IsAbs(pattern):
		return string(filepath.Separator)
	case prefix == "":
		return "."
	}
	return prefix
}

// within reports whether p is dir or lies below it. Both must be clean and absolute.
func within(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolveFrom resolves p (absolute, or relative to base, which must already be
// resolved) the way the kernel walks it: component by component, following
// symlinks, ".." going to the parent of what has been resolved so far. Once a
// component does not exist, the rest is appended lexically.
func resolveFrom(base, p string, hops *int) (string, error) {
	cur := base
	if filepath.IsAbs(p) {
		cur = string(filepath.Separator)
	}
	parts := strings.Split(p, string(filepath.Separator))
	for i, part := range parts {
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				return filepath.Join(cur, strings.Join(parts[i:], string(filepath.Separator))), nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		*hops++
		if *hops > maxLinkHops {
			return "", errTooManyLinks
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if cur, err = resolveFrom(cur, target, hops); err != nil {
			return "", err
		}
	}
	return cur, nil
}

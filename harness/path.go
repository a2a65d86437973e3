package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultPath is the harness's PATH when none of the daemon's entries is
// trusted.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// maxLinks bounds the links followed while resolving one path (a loop ends
// there, like ELOOP).
const maxLinks = 255

// DroppedEntry is a PATH entry TrustedPath leaves out, and why.
type DroppedEntry struct {
	// Entry is the entry as PATH spells it ("" for an empty one).
	Entry string
	// Untrusted is the untrusted directory (as given) that holds the entry;
	// "" when the entry was dropped for being empty or relative.
	Untrusted string
	// Via is how the entry reaches Untrusted when not by its own spelling: a
	// link on its way, or its resolved form ("" otherwise).
	Via string
}

// TrustedPath keeps the entries of the PATH value path that no job can write:
// it drops every empty or relative entry ("", ".", "bin": looked up from the
// current directory, for the harness and its commands the workspace) and
// every entry that equals or lies inside one of the untrusted directories.
// It compares the cleaned paths and their symlink-resolved forms, so an entry
// that is a link into an untrusted directory, or that passes through a link
// that lives in one (which a job could re-point), is dropped too. An entry
// that does not exist (yet) is resolved as far as it exists: it is kept only
// if it lies outside every untrusted directory both ways, since a job could
// create it. With nothing left, kept is DefaultPath.
func TrustedPath(path string, untrusted []string) (kept string, dropped []DroppedEntry) {
	type dir struct{ given, form string }
	var bad []dir
	for _, u := range untrusted {
		if u == "" {
			continue
		}
		if !filepath.IsAbs(u) {
			abs, err := filepath.Abs(u)
			if err != nil {
				continue
			}
			u = abs
		}
		forms := resolveTrail(u)
		for _, f := range []string{forms[0], forms[len(forms)-1]} {
			bad = append(bad, dir{u, f})
		}
	}
	var keep []string
entries:
	for _, e := range filepath.SplitList(path) {
		if !filepath.IsAbs(e) {
			dropped = append(dropped, DroppedEntry{Entry: e})
			continue
		}
		forms := resolveTrail(e)
		for _, b := range bad {
			for i, f := range forms {
				if within(b.form, f) {
					d := DroppedEntry{Entry: e, Untrusted: b.given}
					if i > 0 {
						d.Via = f
					}
					dropped = append(dropped, d)
					continue entries
				}
			}
		}
		keep = append(keep, e)
	}
	if len(keep) == 0 {
		return DefaultPath, dropped
	}
	return strings.Join(keep, string(filepath.ListSeparator)), dropped
}

// LookTrusted finds the program name on the PATH value path, with
// exec.LookPath's semantics for each candidate, and returns its absolute
// path. Empty and relative entries are skipped — pass a TrustedPath value,
// so that what the daemon starts outside the sandbox (bwrap, socat, git)
// never comes from a directory a job can write. A name with a separator is
// taken as it is, and must be absolute.
func LookTrusted(name, path string) (string, error) {
	if strings.ContainsAny(name, `/`+string(filepath.Separator)) {
		if !filepath.IsAbs(name) {
			return "", &exec.Error{Name: name, Err: exec.ErrDot}
		}
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// TrustedLook returns a LookTrusted over path without the entries a job
// could write (TrustedPath against untrusted) — and, unlike the harness's
// PATH, never DefaultPath when every entry was dropped: then nothing is
// found, and the caller says so. The daemon finds bwrap, socat and claude
// with it, and bridgectl the claude the daemon would find.
func TrustedLook(path string, untrusted []string) func(name string) (string, error) {
	kept, dropped := TrustedPath(path, untrusted)
	if len(dropped) == len(filepath.SplitList(path)) {
		kept = ""
	}
	return func(name string) (string, error) { return LookTrusted(name, kept) }
}

// resolveTrail resolves the absolute path p one component at a time, like
// filepath.EvalSymlinks, and returns every spelling of it on the way: p
// cleaned first, then each link it passes through (the link itself: whoever
// can write the directory that holds it can re-point it), and last the
// resolved path. What does not exist ends the walk; the rest is appended as
// written. A loop of links ends the walk after maxLinks.
func resolveTrail(p string) []string {
	p = filepath.Clean(p)
	trail := []string{p}
	vol := filepath.VolumeName(p)
	resolved := vol + string(filepath.Separator)
	rest := components(p[len(vol):])
	for links := 0; len(rest) > 0; {
		next := filepath.Join(resolved, rest[0])
		rest = rest[1:]
		fi, err := os.Lstat(next)
		if err != nil {
			resolved = filepath.Join(append([]string{next}, rest...)...)
			break
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		trail = append(trail, next)
		target, err := os.Readlink(next)
		if links++; err != nil || links > maxLinks {
			resolved = filepath.Join(append([]string{next}, rest...)...)
			break
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			if tv == "" {
				tv = vol
			}
			resolved = tv + string(filepath.Separator)
			target = target[len(filepath.VolumeName(target)):]
		}
		rest = append(components(target), rest...)
	}
	return append(trail, resolved)
}

// components splits a path into its names, leaving out empty ones.
func components(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) })
}

// within reports whether p is root or lies inside it. On macOS and Windows,
// whose disks usually ignore case, it ignores case: dropping a PATH entry
// too many is safe, keeping one a job can write is not.
func within(root, p string) bool {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		root, p = strings.ToLower(root), strings.ToLower(p)
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Errors of AdmitWorkspace; test with errors.Is.
var (
	ErrNoRoots       = errors.New("no allowed roots configured")
	ErrNotAbsolute   = errors.New("workspace is not an absolute path")
	ErrNotFound      = errors.New("workspace does not exist")
	ErrNotDir        = errors.New("workspace is not a directory")
	ErrOutsideRoots  = errors.New("workspace is outside every allowed root")
	ErrSymlinkEscape = errors.New("workspace escapes the allowed roots through a symlink")
	ErrProtectedPath = errors.New("workspace overlaps a protected path")
)

// OverlapError is AdmitWorkspace's refusal of a workspace that contains, or
// lies inside, a protected path; errors.Is(err, ErrProtectedPath) holds. A
// caller that knows what Protected is (the state dir, a binary) can say so.
type OverlapError struct {
	Workspace string // resolved
	Protected string // as given
	Inside    bool   // the workspace lies inside Protected; else it contains it
}

func (e *OverlapError) Error() string {
	if e.Inside {
		return fmt.Sprintf("%v: %s lies inside %s, which a job must never reach; choose a directory outside it", ErrProtectedPath, e.Workspace, e.Protected)
	}
	return fmt.Sprintf("%v: %s contains %s, which a job must never reach; choose a directory that does not contain it, or move it out", ErrProtectedPath, e.Workspace, e.Protected)
}

func (e *OverlapError) Unwrap() error { return ErrProtectedPath }

// AdmitWorkspace checks that dir may be a job's workspace: it must be an
// absolute path to an existing directory that lies inside one of roots after
// symlinks are resolved (roots are resolved too). It must neither contain nor
// lie inside any of protected (the state dir, the daemon's .env), because a job
// can read and write its whole workspace. It returns the resolved directory,
// which is what the harness should be started in.
func AdmitWorkspace(roots []string, dir string, protected ...string) (string, error) {
	var live []string
	for _, r := range roots {
		if strings.TrimSpace(r) != "" {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return "", fmt.Errorf("%w: every workspace is refused until you grant one with `bridgectl allow DIR` or DEEPSEEK_ALLOWED_ROOTS=DIR in .env", ErrNoRoots)
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: %q; pass the full path of a directory under %s", ErrNotAbsolute, dir, strings.Join(live, ", "))
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %s", ErrNotFound, dir)
	case err != nil:
		return "", fmt.Errorf("workspace %s: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("%w: %s", ErrNotDir, dir)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", dir, err)
	}

	inside, lexicallyInside := false, false
	for _, r := range live {
		clean := filepath.Clean(r)
		if within(filepath.Clean(dir), clean) {
			lexicallyInside = true
		}
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue // a root that does not exist contains nothing
		}
		if within(resolved, rr) {
			inside = true
			break
		}
		if within(filepath.Clean(dir), rr) {
			lexicallyInside = true
		}
	}
	if !inside {
		if lexicallyInside {
			return "", fmt.Errorf("%w: %s resolves to %s, outside the allowed roots %s", ErrSymlinkEscape, dir, resolved, strings.Join(live, ", "))
		}
		return "", fmt.Errorf("%w: %s is not under %s; grant it with `bridgectl allow DIR`", ErrOutsideRoots, resolved, strings.Join(live, ", "))
	}

	for _, p := range protected {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		forms := []string{filepath.Clean(p)}
		if rp, err := resolveFrom("/", p, new(int)); err == nil {
			forms = append(forms, rp)
		}
		for _, f := range forms {
			if within(resolved, f) || within(f, resolved) {
				return "", &OverlapError{Workspace: resolved, Protected: p, Inside: within(resolved, f)}
			}
		}
	}
	return resolved, nil
}

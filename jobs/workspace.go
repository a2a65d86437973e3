package jobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrWorkspace: the workspace was refused; the message says why and what to do.
var ErrWorkspace = errors.New("workspace refused")

// AdmitWorkspace checks that dir is an existing directory inside one of roots
// once every symlink is resolved, and returns its resolved path. With no roots
// every workspace is refused (fail closed). stateDir, if set, must not overlap
// the workspace: a job must never reach the bridge's own state.
//
// The sandbox package may replace this check (Options.Admit); it is kept here
// so the registry fails closed on its own.
func AdmitWorkspace(roots []string, stateDir, dir string) (string, error) {
	if len(roots) == 0 {
		return "", fmt.Errorf("%w: no workspace is allowed because DEEPSEEK_ALLOWED_ROOTS is empty. Ask the owner to grant a root: set DEEPSEEK_ALLOWED_ROOTS=/path/to/projects in the bridge's .env and restart it (`bridgectl stop && bridgectl start`)", ErrWorkspace)
	}
	if strings.TrimSpace(dir) == "" {
		return "", fmt.Errorf("%w: workspace is empty: pass the absolute path of a directory inside %s", ErrWorkspace, strings.Join(roots, ", "))
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: workspace %q is not an absolute path: pass the absolute path of a directory inside %s", ErrWorkspace, dir, strings.Join(roots, ", "))
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s does not exist or cannot be resolved (%v): create it first, inside %s", ErrWorkspace, dir, unwrapPathErr(err), strings.Join(roots, ", "))
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%w: workspace %s: %v", ErrWorkspace, dir, unwrapPathErr(err))
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%w: workspace %s is not a directory: pass a directory", ErrWorkspace, dir)
	}
	inside := false
	for _, root := range roots {
		rr, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // a root that does not exist admits nothing
		}
		if within(rr, real) {
			inside = true
			break
		}
	}
	if !inside {
		via := ""
		if real != filepath.Clean(dir) {
			via = fmt.Sprintf(" (it resolves to %s through a symlink)", real)
		}
		return "", fmt.Errorf("%w: workspace %s%s is outside the allowed roots %s: use a directory inside one of them, or ask the owner to add a root to DEEPSEEK_ALLOWED_ROOTS", ErrWorkspace, dir, via, strings.Join(roots, ", "))
	}
	if stateDir != "" {
		sd, err := filepath.EvalSymlinks(stateDir)
		if err != nil {
			sd = filepath.Clean(stateDir)
		}
		if within(real, sd) || within(sd, real) {
			return "", fmt.Errorf("%w: workspace %s overlaps the bridge's state directory %s: use another directory", ErrWorkspace, dir, sd)
		}
	}
	return real, nil
}

// within reports whether path is root or below it (both already resolved).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

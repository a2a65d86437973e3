package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// checkRuntimeRoots resolves BRIDGE_RUNTIME_ROOTS and refuses, at start-up,
// a root a job must not see whole: one that is missing or not a directory,
// or one that holds (or lies in) the state dir, the daemon's .env, its home,
// one of its credential stores or an allowed root (whose workspaces it
// would turn read-only, and whose other workspaces it would show).
func checkRuntimeRoots(cfg config.Config, stateDir, home string) ([]string, error) {
	var out []string
	for _, r := range cfg.RuntimeRoots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", config.ErrBadRuntimeRoot, r, err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%w: %s is not a directory", config.ErrBadRuntimeRoot, r)
		}
		// A root must not lie in these nor hold them. A credential store
		// inside a root (~/.cargo/credentials.toml) is hidden in the jail
		// instead (storesInRuntime); a root inside a store is refused.
		both := []string{stateDir, cfg.EnvFile}
		both = append(both, cfg.AllowedRoots...)
		for _, p := range sandbox.DefaultDenyRead(home, "", "") {
			if contains(resolved(p), real) {
				return nil, fmt.Errorf("%w: %s lies in the credential store %s, which no job may see", config.ErrBadRuntimeRoot, r, p)
			}
		}
		for _, p := range both {
			if p == "" {
				continue
			}
			pr := resolved(p)
			if contains(real, pr) || contains(pr, real) {
				return nil, fmt.Errorf("%w: %s overlaps %s, which no job may see whole (the state dir, the daemon's .env or an allowed root); name the toolchain's own dir instead, such as a venv, ~/.cargo or ~/go/pkg/mod", config.ErrBadRuntimeRoot, r, p)
			}
		}
		// It may lie in the home (~/.cargo), not hold it.
		if home != "" && contains(real, resolved(home)) {
			return nil, fmt.Errorf("%w: %s holds the home directory %s, which no job may see; name the toolchain's own dir instead, such as ~/.cargo or ~/go/pkg/mod", config.ErrBadRuntimeRoot, r, home)
		}
		out = append(out, real)
	}
	return out, nil
}

// contains reports whether outer is inner or holds it.
func contains(outer, inner string) bool {
	rel, err := filepath.Rel(outer, inner)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolved is p with its links resolved, or p when it cannot be.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// existingStores are the credential stores under the daemon's home that
// exist, links resolved: the plan hides those inside a runtime root in the
// jail (storesInRuntime).
func existingStores(home string) []string {
	var out []string
	for _, p := range sandbox.DefaultDenyRead(home, "", "") {
		rp := resolved(p)
		if _, err := os.Lstat(rp); err == nil {
			out = append(out, rp)
		}
	}
	return out
}

// CheckRuntimeRoots is the start-up check of BRIDGE_RUNTIME_ROOTS on its
// own, for bridgectl to run before it stops a daemon to restart it: a root
// the new daemon would refuse leaves the running one untouched.
func CheckRuntimeRoots(cfg config.Config, home string) error {
	_, err := checkRuntimeRoots(cfg, cfg.StateDir, home)
	return err
}

package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// globChars are the characters that make sandbox.Admit read a path as a
// glob pattern.
const globChars = "*?[{"

// admit is g.Admit for a path a program or a file tool opens as written.
// Admit reads a path holding a glob character as a pattern and resolves it
// only up to that component, but a file can be named so: a job can make
// 's[t]ate' a symlink to the state dir and then write 's[t]ate/approval-off'.
// Such a path is also resolved as written, and the stricter verdict wins;
// Resolved is then that resolution.
func admit(g sandbox.Guard, path string) sandbox.Decision {
	d := g.Admit(path)
	if !strings.ContainsAny(path, globChars) || d.Protected {
		return d
	}
	lit := g.Admit(resolveAsWritten(path, g.Workspace))
	switch {
	case lit.Protected:
		lit.Reason = fmt.Sprintf("%s resolves to %s, a protected path of the bridge", path, lit.Resolved)
		return lit
	case !d.Inside:
		return d
	case !lit.Inside:
		lit.Reason = fmt.Sprintf("%s escapes the workspace through a symlink (resolves to %s)", path, lit.Resolved)
		return lit
	}
	d.Resolved = lit.Resolved
	return d
}

// resolveAsWritten resolves path (absolute, or relative to the workspace) as
// the kernel would open it: the longest prefix that exists with its symlinks
// followed (.. after a symlink goes to the parent of its target), and the
// rest appended as it is.
func resolveAsWritten(path, workspace string) string {
	p := path
	if !filepath.IsAbs(p) {
		p = workspace + string(filepath.Separator) + p // not Join: it would clean link/.. away
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		i := strings.LastIndexByte(p, filepath.Separator)
		if i <= 0 {
			return filepath.Join(p, rest)
		}
		p, rest = p[:i], filepath.Join(p[i+1:], rest)
	}
}

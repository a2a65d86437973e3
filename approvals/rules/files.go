package rules

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// runLaterDirs, runLaterFiles and runLaterPrefixes name workspace paths whose
// contents other programs run later on the owner's machine, outside any
// sandbox: git's config and hooks (core.fsmonitor runs at the owner's next
// `git status`), Claude Code's project settings and MCP servers (hooks,
// enableAllProjectMcpServers), editors' task files, hook managers' dirs and
// configs (pre-commit and lefthook run the commands their config in the work
// tree names at every `git commit`), package managers' configs (.npmrc's
// script-shell, .yarnrc's yarn-path), shell start-up files. Claude Code's
// sandbox refuses its commands writes to some of them; its file tools run
// outside the sandbox, so the rules deny them a write there, and any command
// that names one as what it writes, with approval off too: an Edit of
// .git/config can plant an fsmonitor that runs with the owner's environment.
//
// Not listed: .gitattributes, which only names filter, diff and merge drivers
// whose commands come from git's config; .pre-commit-hooks.yaml, which
// pre-commit reads only from a repository that some config names as a source
// of hooks, at a pinned revision: this project once published, like its
// Makefile; .editorconfig, which holds no commands.
var (
	runLaterDirs  = []string{".git", ".claude", ".vscode", ".idea", ".husky", ".githooks"}
	runLaterFiles = append([]string{".mcp.json", ".gitmodules", ".gitconfig", ".bashrc", ".bash_profile", ".bash_login",
		".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".ripgreprc", ".envrc", ".npmrc",
		".pre-commit-config.yaml", ".pre-commit-config.yml"}, lefthookConfigs()...)
	runLaterPrefixes = []string{".yarnrc"} // .yarnrc, .yarnrc.yml, .yarnrc.yaml, …
)

// lefthookConfigs are the names lefthook reads its config (and the local
// override) from.
func lefthookConfigs() []string {
	var out []string
	for _, base := range []string{"lefthook", ".lefthook", "lefthook-local", ".lefthook-local"} {
		for _, ext := range []string{"yml", "yaml", "toml", "json", "jsonc"} {
			out = append(out, base+"."+ext)
		}
	}
	return out
}

// runsLater returns the workspace-relative path when path (absolute, or
// relative to the workspace) lies in a runLaterDirs dir or names a
// runLaterFiles file, anywhere below the workspace.
func runsLater(path, workspace string) (string, bool) {
	rel, below := belowWorkspace(path, workspace)
	if !below {
		return "", false
	}
	comps := strings.Split(rel, string(filepath.Separator))
	for i, c := range comps {
		c = strings.ToLower(c)
		if i < len(comps)-1 && slices.Contains(runLaterDirs, c) || i == len(comps)-1 && runLaterName(c) {
			return rel, true
		}
	}
	return "", false
}

// runLaterName reports whether the last component of a path, lower-cased,
// names what runs later.
func runLaterName(c string) bool {
	if slices.Contains(runLaterFiles, c) || slices.Contains(runLaterDirs, c) {
		return true
	}
	for _, p := range runLaterPrefixes {
		if strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// runLaterReason is the reason a write of rel (runsLater) is denied.
func runLaterReason(rel string) string {
	return fmt.Sprintf("%s is run later outside any sandbox (by git, Claude Code, an editor, a hook manager or a shell): no job may write it, and its commands cannot either", rel)
}

// belowWorkspace returns path relative to the workspace (as given or with
// its symlinks resolved), cleaned; a relative path is taken as relative to
// the workspace already. below is false for an absolute path elsewhere.
func belowWorkspace(path, workspace string) (rel string, below bool) {
	if !filepath.IsAbs(path) {
		return filepath.Clean(path), true
	}
	for _, ws := range []string{workspace, resolvedOrSelf(workspace)} {
		if r, err := filepath.Rel(ws, path); ws != "" && err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return r, true
		}
	}
	return filepath.Clean(path), false
}

// MaxPathBytes bounds a file tool's path argument: PATH_MAX on Linux.
const MaxPathBytes = 4096

func classifyFile(req Request, args []pathArg, p Policy) Verdict {
	g := sandbox.Guard{Workspace: p.Workspace, Protected: p.Protected}
	base := "."
	var shown []string
	var ask []string
	for _, a := range args {
		raw, present := req.Input[a.key]
		if !present || raw == nil {
			if a.required {
				return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is missing", req.Tool, a.key), Summary: Summarize(req)}
			}
			continue
		}
		s, ok := raw.(string)
		if !ok {
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is not a string", req.Tool, a.key), Summary: Summarize(req)}
		}
		if len(s) > MaxPathBytes {
			// No file has such a name (PATH_MAX), and reading one (brace
			// alternatives, globs, a reason that quotes it) costs the daemon
			// by the byte.
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is %d bytes, longer than any path (%d)", req.Tool, a.key, len(s), MaxPathBytes), Summary: Clip(req.Tool + " " + s)}
		}
		if s == "" {
			if a.required {
				return Verdict{Decision: Deny, Reason: fmt.Sprintf("malformed %s call: %q is empty", req.Tool, a.key), Summary: Summarize(req)}
			}
			continue
		}
		path := s
		if a.glob {
			path = strings.TrimPrefix(path, "!") // a Grep glob may be negated
			if !filepath.IsAbs(path) && !strings.HasPrefix(path, "~") {
				path = strings.TrimSuffix(base, "/") + "/" + path // not Join: it would clean ".." away
			}
		}
		if a.key == "path" {
			base = s
		}
		shown = append(shown, s)
		d := g.Admit(path)
		if !a.glob {
			d = admit(g, path) // a file tool opens the path as written
		}
		if writeTools[req.Tool] {
			for _, c := range []string{path, d.Resolved} {
				if rel, later := runsLater(c, p.Workspace); c != "" && later {
					return Verdict{Decision: Deny, Reason: runLaterReason(rel), Summary: Clip(req.Tool + " " + strings.Join(shown, " "))}
				}
			}
		}
		switch {
		case d.Protected:
			return Verdict{Decision: Deny, Reason: d.Reason + protectedWhy, Summary: Clip(req.Tool + " " + strings.Join(shown, " "))}
		case !d.Inside:
			ask = append(ask, d.Reason)
		case namesDotEnv(s, p.Workspace) || namesDotEnv(d.Resolved, p.Workspace):
			ask = append(ask, s+" names a .env file, which usually holds secrets")
		}
	}
	summary := Clip(req.Tool + " " + strings.Join(shown, " "))
	if len(shown) == 0 {
		summary = req.Tool + " (workspace)"
	}
	if len(ask) > 0 {
		return Verdict{Decision: Ask, Reason: strings.Join(ask, "; "), Summary: summary}
	}
	return Verdict{Decision: Allow, Reason: "every path is inside the workspace", Summary: summary}
}

// namesDotEnv reports whether a path names a .env-style file or directory:
// a component, below the workspace, that contains ".env" in any case. The
// workspace's own path is left out, so a project under ~/my.envoy/ is not
// flagged as a whole.
func namesDotEnv(path, workspace string) bool {
	rel, _ := belowWorkspace(path, workspace) // outside: every component counts
	for _, comp := range strings.Split(rel, string(filepath.Separator)) {
		if strings.Contains(strings.ToLower(comp), ".env") {
			return true
		}
	}
	return false
}

func resolvedOrSelf(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

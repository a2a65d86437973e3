package changes

import (
	"bytes"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// Why a change is held back until the owner promotes it: each is a
// property of the change that a person reading a diff does not see, or a
// place other programs read without anyone looking. A change with none of
// them is visible: it lands and the diff shows it.
const (
	HeldDotPath    = "a dotfile or inside a dot-folder: tools and shells read these without anyone looking (.env, .envrc, .cargo/, .vscode/, …)"
	HeldGit        = "git's internals (.git/, .gitattributes, .gitmodules): git runs what they name"
	HeldGitShape   = "part of a git dir's shape (a HEAD beside objects/, refs/, config): git would take the folder for a repository and obey its config"
	HeldDependency = "inside a dependency or cache folder, which tools load without showing it"
	HeldVenv       = "inside a Python virtual environment (a pyvenv.cfg above it)"
	HeldBytecode   = "compiled bytecode: the interpreter runs it instead of its source"
	HeldPathHook   = "a Python path hook (.pth): every python run executes it"
	HeldBinary     = "not text: a diff does not show what it does"
	HeldExecutable = "made executable"
	HeldLink       = "a symbolic link: a diff does not show where it leads"
	HeldSpecial    = "not a regular file, directory or link"
	HeldIgnored    = "ignored by git: `git status` and `git diff` do not show it"
	HeldDenyPath   = "a deny path of the job's policy"
	HeldToolConfig = "a tool's configuration or build script, which editors and tools load on their own (opening the folder, a build): *.config.js and its kin, *.properties, build.rs, Gradle, CMake and MSBuild files, hook managers' configs, toolchain selectors"
	HeldDirMode    = "a directory's permissions changed: a diff does not show it"
	HeldUnreadable = "the daemon could not read it in the job's upper dir (too deep, or no permission): what it holds is not known"
	HeldNoDiff     = "the diff cannot show it (too large, its earlier contents unreadable, or past the diff's bound)"
	HeldHook       = "a git hook of the workspace (a .git/hooks link leads to it, or it is in core.hooksPath): git runs it at the next commit"
)

// toolConfig reports whether a file named base is a configuration that a
// tool loads, and often runs, without being named on a command line: the
// families, not a list of today's tools — a JavaScript or TypeScript
// config (eslint.config.js, vite.config.ts, jest.config.cjs, …), a Java
// properties file (gradle.properties, gradle-wrapper.properties), Cargo's
// build.rs and MSBuild's Directory.Build.*, which IDEs run on opening a
// folder, and the runs-later names without a leading dot
// (sandbox.RunsLaterFiles: lefthook.yml, rust-toolchain.toml, mise.toml, …).
func toolConfig(base string) bool {
	if slices.Contains(sandbox.RunsLaterFiles, base) {
		return true
	}
	lower := strings.ToLower(base)
	ext := path.Ext(lower)
	stem := strings.TrimSuffix(lower, ext)
	switch {
	case configScriptExts[ext] && (strings.Contains(stem+".", ".config.") || strings.HasSuffix(stem, ".workspace")):
		return true // eslint.config.js, webpack.config.babel.js, vitest.workspace.ts
	case ext == ".properties", lower == "build.rs":
		return true
	case ext == ".gradle", strings.HasSuffix(lower, ".gradle.kts"):
		return true // Gradle's import on opening the folder runs them
	case lower == "cmakelists.txt", strings.HasPrefix(lower, "cmakepresets"), strings.HasPrefix(lower, "cmakeuserpresets"), ext == ".cmake":
		return true // CMake's configure on opening the folder runs them
	case msbuildExts[ext], strings.HasPrefix(lower, "directory.build."), strings.HasPrefix(lower, "directory.packages."):
		return true // MSBuild's design-time build on opening the folder
	case strings.HasPrefix(lower, "lefthook"):
		return true // lefthook merges every lefthook* config at every hook
	}
	return false
}

// msbuildExts are MSBuild project and import files.
var msbuildExts = map[string]bool{".csproj": true, ".fsproj": true, ".vbproj": true, ".vcxproj": true, ".props": true, ".targets": true, ".proj": true, ".sln": true}

// configScriptExts are the extensions of a config a tool runs as code.
var configScriptExts = map[string]bool{".js": true, ".cjs": true, ".mjs": true, ".ts": true, ".cts": true, ".mts": true}

// dependencyDirs are folder names whose contents tools load as code
// without a person reading them.
var dependencyDirs = map[string]bool{
	"node_modules": true, "__pycache__": true, "site-packages": true, "dist-packages": true,
	"vendor": true, "venv": true, "bower_components": true, "jspm_packages": true,
	"Pods": true, "Carthage": true, "__pypackages__": true,
}

// entryFacts are what the record knows of one change when it decides
// whether it is held.
type entryFacts struct {
	Path    string // slash-separated, relative to the workspace
	Kind    string // "file", "dir", "link", "special"
	Deleted bool
	// NewMode and OldMode are the permission bits now and at the start
	// (OldMode < 0: the file did not exist).
	NewMode, OldMode int
	// Head is the start of the new content (up to sniffBytes), for a file.
	Head []byte
	// InVenv: a dir above it holds a pyvenv.cfg.
	InVenv bool
	// Deny: a deny path of the job's policy.
	Deny bool
}

// holdReason says why a change is held back, or "" when it is visible and
// lands. Being ignored by git is decided apart (it needs git).
func holdReason(f entryFacts) string {
	parts := strings.Split(f.Path, "/")
	for i, p := range parts {
		switch {
		case p == ".git" || i == len(parts)-1 && (p == ".gitattributes" || p == ".gitmodules"):
			return HeldGit
		case strings.HasPrefix(p, "."):
			return HeldDotPath
		case i < len(parts)-1 && dependencyDirs[p], i == len(parts)-1 && f.Kind == "dir" && dependencyDirs[p]:
			return HeldDependency
		}
	}
	if f.Deny {
		return HeldDenyPath
	}
	if f.InVenv {
		return HeldVenv
	}
	if f.Deleted {
		return ""
	}
	switch f.Kind {
	case "unreadable":
		return HeldUnreadable
	case "link":
		return HeldLink
	case "special":
		return HeldSpecial
	case "dir":
		if f.OldMode >= 0 && f.NewMode != f.OldMode {
			return HeldDirMode
		}
		return ""
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".pyc", ".pyo":
		return HeldBytecode
	case ".pth":
		return HeldPathHook
	}
	if f.NewMode&0o111 != 0 && (f.OldMode < 0 || f.OldMode&0o111 != f.NewMode&0o111) {
		return HeldExecutable
	}
	if !readable(f.Head) {
		return HeldBinary
	}
	if toolConfig(path.Base(f.Path)) {
		return HeldToolConfig
	}
	return ""
}

// readable: no NUL byte and valid UTF-8 (a rune cut at the end of the
// sniffed bytes counts as valid).
func readable(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n <= 1 {
			return len(head) < utf8.UTFMax && !utf8.FullRune(head)
		}
		head = head[n:]
	}
	return true
}

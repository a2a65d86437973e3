package changes

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
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
)

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
	case "link":
		return HeldLink
	case "special":
		return HeldSpecial
	case "dir":
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

package rules

import (
	"slices"
	"strings"
)

// gitRules: local subcommands run unattended; anything that contacts a
// remote, changes configuration or runs a program of the job's choosing
// goes to a human.
var gitRules = program{form: func(_ string, args []string) string { return gitForm(args) }}

// gitSafe are local git subcommands; anything else (push, fetch, clone,
// config, remote, credential, submodule, send-email, daemon, filter-branch,
// difftool, hook, …) goes to a human.
var gitSafe = []string{"status", "log", "diff", "show", "add", "commit", "checkout", "switch", "restore",
	"branch", "tag", "merge", "rebase", "reset", "stash", "rm", "mv", "init", "blame", "grep", "ls-files",
	"ls-tree", "rev-parse", "rev-list", "describe", "shortlog", "cherry-pick", "revert", "apply",
	"format-patch", "am", "clean", "cat-file", "show-ref", "for-each-ref", "reflog", "worktree", "notes",
	"bisect", "version", "help", "merge-base", "name-rev", "whatchanged", "range-diff", "cherry", "count-objects",
	"check-ignore", "check-attr", "var", "diff-tree", "diff-files", "diff-index", "annotate"}

// gitValueOpts are git's global options that take the next word as a value.
var gitValueOpts = []string{"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}

func gitForm(args []string) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "-c" || strings.HasPrefix(a, "-c") && len(a) > 2 || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path") {
			return "git " + a + " changes git's configuration for this call"
		}
		if slices.Contains(gitValueOpts, a) {
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i], args[i+1:]
	if sub == "remote" {
		if len(rest) == 0 || rest[0] == "-v" || rest[0] == "--verbose" || rest[0] == "show" && len(rest) > 1 && rest[1] == "-n" || rest[0] == "get-url" {
			return ""
		}
		return "git remote " + strings.Join(rest[:1], "") + " changes or contacts a remote"
	}
	if !slices.Contains(gitSafe, sub) {
		return "git " + sub + " is not a known local git command (push, config, fetch and the like go to a human)"
	}
	for _, a := range rest {
		switch {
		case sub == "rebase" && (strings.HasPrefix(a, "-x") || abbrevOf(a, "exec", 2)):
			return "git rebase --exec runs commands"
		case sub == "bisect" && a == "run":
			return "git bisect run runs commands"
		case sub == "grep" && (a == "-O" || strings.HasPrefix(a, "-O") || abbrevOf(a, "open-files-in-pager", 2)):
			return "git grep --open-files-in-pager runs a program"
		case strings.HasPrefix(a, "--unsafe"):
			return "git " + sub + " " + a + " writes outside the work tree"
		case a == "--upload-pack" || strings.HasPrefix(a, "--upload-pack=") || strings.HasPrefix(a, "--receive-pack") || strings.HasPrefix(a, "--exec="):
			return "git " + a + " runs a program"
		}
	}
	return ""
}

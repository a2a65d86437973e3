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

// gitValueOpts are git's global options that take a value, as the next
// word or after =; gitFlagOpts are the ones that take none. git compares
// them whole (no abbreviations); any other word before the subcommand goes
// to a human.
var (
	gitValueOpts = []string{"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source"}
	gitFlagOpts  = []string{"-p", "--paginate", "-P", "--no-pager", "--no-replace-objects", "--no-lazy-fetch",
		"--no-optional-locks", "--no-advice", "--bare", "--literal-pathspecs", "--glob-pathspecs",
		"--noglob-pathspecs", "--icase-pathspecs", "--html-path", "--man-path", "--info-path", "-v", "--version",
		"-h", "--help"}
)

func gitForm(args []string) string {
	i, valued := 0, false
options:
	for ; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "-c" || strings.HasPrefix(a, "-c") && len(a) > 2 || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path"):
			return "git " + a + " changes git's configuration for this call"
		case slices.Contains(gitValueOpts, a):
			i, valued = i+1, i+1 == len(args)-1
		case hasValue && name != "-C" && slices.Contains(gitValueOpts, name), strings.HasPrefix(a, "--list-cmds="), slices.Contains(gitFlagOpts, a):
		case strings.HasPrefix(a, "-"):
			return "git " + a + " is an option the rules do not know"
		default:
			break options
		}
	}
	if valued {
		// git --attr-source 0: the last word is a value; the old rules
		// took it for the subcommand and asked, and so do these.
		return "git " + args[len(args)-2] + " " + args[len(args)-1] + " has no subcommand"
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
		// parse-options takes -x in a cluster (-fx cmd: -x, whose value is
		// cmd), and any unambiguous abbreviation of a long option.
		case sub == "rebase" && (hasShort(a, 'x', "sXSC") || abbrevOf(a, "exec", 2)):
			return "git rebase --exec runs commands"
		case sub == "bisect" && a == "run":
			return "git bisect run runs commands"
		case sub == "grep" && (hasShort(a, 'O', "efABCm") || abbrevOf(a, "open-files-in-pager", 2)):
			return "git grep --open-files-in-pager runs a program"
		case abbrevOf(a, "unsafe-paths", 2) || strings.HasPrefix(a, "--unsafe"): // and any other --unsafe… word, asked about as before
			return "git " + sub + " " + a + " (--unsafe-paths) writes outside the work tree"
		case abbrevOf(a, "upload-pack", 2) || abbrevOf(a, "receive-pack", 2) ||
			strings.HasPrefix(a, "--upload-pack") || strings.HasPrefix(a, "--receive-pack") || strings.HasPrefix(a, "--exec="):
			return "git " + a + " runs a program"
		}
	}
	return ""
}

// gitWrites: what git writes in the work tree at paths its arguments name:
// git mv's destination, the paths checkout and restore write, the worktree
// add makes, files --output, format-patch -o, archive -o and config --file
// name, and the --work-tree checkout and the like write into; init and clone
// with a template copy its hooks into the new .git. Paths are below the
// directories -C names.
func gitWrites(args []string) writeTargets {
	var dirs, tree []string
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		switch a := args[i]; {
		case a == "-C" && i+1 < len(args):
			dirs = append(dirs, args[i+1])
			i++
		case a == "--work-tree" && i+1 < len(args):
			tree = append(tree, args[i+1])
			i++
		case strings.HasPrefix(a, "--work-tree="):
			tree = append(tree, strings.TrimPrefix(a, "--work-tree="))
		case slices.Contains(gitValueOpts, a) || a == "-c":
			i++
		}
	}
	if i >= len(args) {
		return writeTargets{}
	}
	sub, rest := args[i], args[i+1:]
	var t writeTargets
	switch sub {
	case "mv":
		t = copyWrites("")(rest)
	case "checkout", "restore":
		t.paths = operands(rest)
	case "worktree":
		if len(rest) > 0 && rest[0] == "add" {
			t.paths = operands(rest[1:])
		}
	case "init", "clone":
		for _, a := range args { // --template, or -c init.templateDir=
			if abbrevOf(a, "template", 3) || strings.Contains(strings.ToLower(a), "init.templatedir") {
				t.why = "git " + sub + " with a template copies the template's hooks into the new repository's .git"
			}
		}
		t.paths = optionValues(rest, 0, "", "separate-git-dir", 3)
	case "format-patch", "archive":
		t.paths = optionValues(rest, 'o', "v", "output-directory", 3)
	case "config":
		t.paths = optionValues(rest, 'f', "", "file", 3)
	}
	t.paths = append(t.paths, optionValues(rest, 0, "", "output", 3)...)
	t.paths = append(t.paths, tree...) // checkout and the like write the files there
	for _, d := range slices.Backward(dirs) {
		for j, p := range t.paths {
			t.paths[j] = below(d, p)
		}
	}
	return t
}

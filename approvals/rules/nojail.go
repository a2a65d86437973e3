package rules

import (
	"fmt"
	"slices"
	"strings"
)

// writesUnheld names the first program of a command whose writes the rules
// do not model, when write_paths restrict the job's writes and no jail holds
// them (macOS, whose sandbox lets commands write the whole workspace, and
// BRIDGE_SANDBOX=off): there the rules alone hold write_paths, and they can
// only check the paths a program they model writes. It returns "" when every
// program of the command is one of those.
func writesUnheld(pc parsed) string {
	for _, call := range pc.calls {
		if len(call) == 0 {
			continue
		}
		name, args := programBase(call[0].text), texts(call[1:])
		known, ok := writesModeled[name]
		if !ok || known != nil && !known(args) {
			return name + " " + strings.Join(args, " ")
		}
	}
	return ""
}

// writesModeled are the programs whose every write in the workspace the
// rules see (a nil func), or see for the invocations it accepts: programs
// that write nothing there, and those whose writes commandWrites names
// (writers, removers, redirections). Programs that run code of the job's
// (python3, node, go test, make, cargo, npm) or rewrite files they find
// (gofmt -w, go mod tidy, git reset, git clean, git stash) are not here.
var writesModeled = map[string]func(args []string) bool{
	"ls": nil, "cat": nil, "head": nil, "tail": nil, "wc": nil, "grep": nil, "egrep": nil, "fgrep": nil,
	"rg": nil, "find": nil, "tree": nil, "pwd": nil, "echo": nil, "printf": nil, "diff": nil, "sort": nil,
	"uniq": nil, "file": nil, "stat": nil, "which": nil, "true": nil, "false": nil, "test": nil, "[": nil,
	"du": nil, "readlink": nil, "realpath": nil, "basename": nil, "dirname": nil, "date": nil,
	"cp": nil, "mv": nil, "ln": nil, "install": nil, "tee": nil, "touch": nil, "truncate": nil,
	"mkdir": nil, "dd": nil, "sed": nil, "gsed": nil, "rm": nil, "rmdir": nil, "unlink": nil, "shred": nil,
	"gofmt": func(args []string) bool { return !hasShortOrLong(args, 'w', "--w") },
	"go":    goReadsOnly,
	"git":   gitReadsOnly,
}

// goReadsOnly: go subcommands that write nothing in the workspace.
func goReadsOnly(args []string) bool {
	sub := firstOperand(args)
	return slices.Contains([]string{"vet", "list", "version", "doc"}, sub) ||
		sub == "env" && !slices.ContainsFunc(args, func(a string) bool { return a == "-w" || a == "-u" })
}

// gitReadOnly are git subcommands that change neither the work tree nor
// .git (what they write with --output, commandWrites names).
var gitReadOnly = []string{"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree",
	"rev-parse", "rev-list", "describe", "shortlog", "cat-file", "show-ref", "for-each-ref", "version",
	"help", "merge-base", "name-rev", "whatchanged", "range-diff", "cherry", "count-objects",
	"check-ignore", "check-attr", "var", "diff-tree", "diff-files", "diff-index", "annotate"}

func gitReadsOnly(args []string) bool {
	sub, _ := gitSubcommand(args)
	return slices.Contains(gitReadOnly, sub)
}

// gitSubcommand is git's subcommand and its arguments, after the global
// options gitForm knows ("" when there is none).
func gitSubcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case slices.Contains(gitValueOpts, a) || a == "-c":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, args[i+1:]
		}
	}
	return "", nil
}

// noJailReason is the reason of a verdict writesUnheld sent to a human.
func noJailReason(call string) string {
	return fmt.Sprintf("write_paths are held by the rules alone here (no jail: macOS or BRIDGE_SANDBOX=off), and they do not know what %s writes: a human decides", Clip(strings.TrimSpace(call)))
}

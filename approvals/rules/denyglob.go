package rules

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/policy"
)

// readsBelowGlob names a read the job's deny_paths globs cannot hold, or
// returns "". A deny path is checked against the paths a call names, but a
// search that starts above it ("secrets/**" under a Grep of the workspace,
// grep -r . .) names none, and git shows a committed file's contents by
// revision (git show HEAD:secrets/key). The daemon expands the globs into
// literal deny rules at the job's start, which hold Claude Code's file tools
// and, jailed, every command; these calls still go to a human, for files a
// glob matches that the walk did not list, and where no jail runs.
//
// Git's history holds every deny path, literal ones too, and no jail hides
// it: its content commands go to a human whenever the job has a deny path;
// with no jail, so do the recursive readers.
func readsBelowGlob(req Request, p Policy, pc parsed) string {
	bases := globBases(p.Job, p.Workspace)
	anyDeny := p.Job != nil && len(p.Job.DenyPaths) > 0
	if !anyDeny {
		return ""
	}
	if req.Tool == "Grep" && len(bases) > 0 {
		root, _ := req.Input["path"].(string)
		if root == "" {
			root = p.Workspace
		}
		abs := absIn(p.Workspace, root)
		for _, b := range bases {
			if onOneLine(abs, b) {
				return "Grep searches " + root + ", which holds files a deny_paths glob matches"
			}
		}
		return ""
	}
	if _, ok := commandTools[req.Tool]; !ok {
		return ""
	}
	for _, call := range pc.calls {
		if len(call) == 0 {
			continue
		}
		name, args := programBase(call[0].text), texts(call[1:])
		if name == "git" && gitShowsContents(args) {
			return "git shows committed files' contents, which may hold a file a deny_paths glob or entry names"
		}
		if len(bases) == 0 && p.Jailed {
			continue // literal deny paths: the jail's deny rules hold every reader
		}
		if reader := recursiveReaders[name]; reader != nil && reader(args) {
			return name + " reads every file below the directories it is given, which may hold files a deny_paths glob matches"
		}
	}
	return ""
}

// globBases are the directories, absolute, below which the job's deny_paths
// globs match: each glob's part before its first wildcard.
func globBases(e *policy.Enforced, ws string) []string {
	if e == nil {
		return nil
	}
	var out []string
	for _, g := range e.DenyPaths {
		if !strings.ContainsAny(g, "*?[") {
			continue
		}
		b := policy.GlobBase(g)
		if b == "" && strings.HasPrefix(g, "/") {
			b = "/"
		}
		if !filepath.IsAbs(b) {
			b = filepath.Join(ws, filepath.FromSlash(b))
		}
		out = append(out, filepath.Clean(b))
	}
	return out
}

// onOneLine reports whether one of the absolute paths a and b holds the other.
func onOneLine(a, b string) bool {
	_, below := relTo(b, a)
	_, above := relTo(a, b)
	return below || above
}

// recursiveReaders are the allow-listed programs that read the contents of
// every file below a directory, by the invocations that do.
var recursiveReaders = map[string]func(args []string) bool{
	"grep": grepRecursive, "egrep": grepRecursive, "fgrep": grepRecursive,
	"rg": func([]string) bool { return true }, // recursive unless every operand is a file
	"cp": func(a []string) bool {
		return hasShortOrLong(a, 'r', "--rec") || hasShortOrLong(a, 'R', "--rec") || hasShortOrLong(a, 'a', "--arc")
	},
	"diff": func(a []string) bool { return hasShortOrLong(a, 'r', "--rec") },
	"git":  gitShowsContents,
}

func grepRecursive(args []string) bool {
	return hasShortOrLong(args, 'r', "--rec") || hasShortOrLong(args, 'R', "--der") || hasShortOrLong(args, 'd', "--dir")
}

// gitContents are git subcommands that print or write what files hold, by
// revision or from the whole work tree.
var gitContents = []string{"grep", "show", "cat-file", "diff", "diff-tree", "diff-files", "diff-index",
	"range-diff", "format-patch", "stash", "notes", "archive", "am", "apply"}

// gitShowsContents: git's content commands, and its history commands with a
// patch option (git log -p).
func gitShowsContents(args []string) bool {
	sub, rest := gitSubcommand(args)
	if slices.Contains(gitContents, sub) {
		return true
	}
	if !slices.Contains([]string{"log", "whatchanged", "reflog", "shortlog"}, sub) {
		return false
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		for _, long := range []string{"--patch", "--unified", "--binary", "--cc", "--diff-merges", "--remerge-diff", "--full-diff", "--word-diff", "--color-words", "--function-context", "--ext-diff", "--textconv", "--dd"} {
			if strings.HasPrefix(a, long) {
				return true
			}
		}
		if !strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], "puULcmW") {
			return true
		}
	}
	return false
}

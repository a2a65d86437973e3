package rules

import (
	"strings"
)

// program is what the rules know about one allowed program beyond the allow
// list. Every field may be nil.
type program struct {
	// rewrite names the one argument a dialect reads that the other rules
	// must not see (BSD sed's -i "", whose "" they would take for the
	// script), or -1; or why the arguments cannot be read.
	rewrite func(args []string) (drop int, why string)
	// links names a recursive walk that follows the symlinks it meets on
	// the way down, or returns "". Every argument may be inside the
	// workspace while a link below it (planted, or checked out by git) leads
	// outside, where the OS sandbox only hides the state dir, .env and
	// credential stores.
	links func(name string, args []string) string
	// form names a dangerous invocation (inline code, a program it runs, a
	// file it reads or writes that the rules cannot see), or returns "".
	form func(name string, args []string) string
	// code returns the indexes of the arguments that are programs, not
	// paths (a sed script, an awk program), checked by form instead.
	code func(args []string) map[int]bool
}

// programs is every program with rules of its own, by name; other names on
// the allow list only have their path arguments checked. The larger rules
// live in a file named after the program (git.go, sed.go, …).
var programs = map[string]program{
	"git":  gitRules,
	"sed":  sedRules,
	"gsed": sedRules,
	"awk":  awkRules, "gawk": awkRules, "mawk": awkRules, "nawk": awkRules,
	"node": nodeRules, "nodejs": nodeRules, "deno": nodeRules, "bun": nodeRules,
	"npm":    npmRules,
	"python": pythonRules, "python3": pythonRules, "python2": pythonRules, "pypy": pythonRules, "pypy3": pythonRules,
	"go":   goRules,
	"find": findRules,
	"make": makeRules, "gmake": makeRules,
	"cargo": cargoRules,
	"rustc": rustcRules,
	"rg":    rgRules,
	"sort":  sortRules,
	"tree":  treeRules,
	"grep":  {links: followsWith('R', "--der")}, "egrep": {links: followsWith('R', "--der")}, "fgrep": {links: followsWith('R', "--der")},
	"cp":   {links: followsWith('L', "--der")},
	"du":   {links: followsWith('L', "--der")},
	"ls":   {links: lsLinks},
	"diff": {links: diffLinks},
}

// dangerousForm names why an invocation of an allowed program must still go
// to a human, or returns "".
func dangerousForm(name string, args []string) string {
	if why := readsFileList(name, args); why != "" {
		return why
	}
	if why := followsLinks(name, args); why != "" {
		return why
	}
	if r := programs[name]; r.form != nil {
		return r.form(name, args)
	}
	return ""
}

// followsLinks names a recursive read, listing or copy that follows symlinks
// below its arguments, or returns "".
func followsLinks(name string, args []string) string {
	if r := programs[name]; r.links != nil {
		return r.links(name, args)
	}
	return ""
}

// notPaths returns the indexes of arguments that are programs, not paths, so
// a /regex/ address is not mistaken for an absolute path.
func notPaths(name string, args []string) map[int]bool {
	if r := programs[name]; r.code != nil {
		return r.code(args)
	}
	return nil
}

// followsWith is a links rule for a program whose short option (alone or
// in a cluster) or long option (or an abbreviation of it) follows links.
func followsWith(short byte, long string) func(string, []string) string {
	return func(name string, args []string) string {
		for _, a := range args {
			if hasShortOrLong([]string{a}, short, long) {
				return name + " " + a + " follows symlinks below its arguments, which may lead outside the workspace"
			}
		}
		return ""
	}
}

// lsLinks: -L alone dereferences the named paths, which the rules admit;
// with -R it lists the trees behind links met on the way down.
func lsLinks(_ string, args []string) string {
	if hasShortOrLong(args, 'L', "--der") && hasShortOrLong(args, 'R', "--rec") {
		return "ls -L -R lists the trees behind symlinks below its arguments, which may lead outside the workspace"
	}
	return ""
}

// diffLinks: diff dereferences symlinks unless told not to; with -N it
// prints a file found on one side only in full.
func diffLinks(name string, args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--no-d") {
			return ""
		}
	}
	return followsWith('r', "--rec")(name, args)
}

var findRules = program{
	// -L and -follow follow every link met below the starting points (-H
	// only the starting points, which the rules admit).
	links: func(_ string, args []string) string {
		for _, a := range args {
			if a == "-L" || a == "-follow" {
				return "find " + a + " follows symlinks below its arguments, which may lead outside the workspace"
			}
		}
		return ""
	},
	form: func(_ string, args []string) string {
		for _, a := range args {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				return "find " + a + " runs commands, deletes or writes files"
			}
		}
		return ""
	},
}

var makeRules = program{form: func(_ string, args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--ev") || !strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.Contains(a, "E") {
			return "make --eval evaluates inline makefile text"
		}
	}
	return ""
}}

var rustcRules = program{form: func(_ string, args []string) string {
	for _, a := range args {
		if strings.Contains(a, "linker") {
			return "rustc -C linker runs a program of the job's choosing"
		}
		if strings.HasPrefix(a, "@") {
			return "rustc @file reads more options (a -C linker among them) from a file the rules cannot see"
		}
	}
	return ""
}}

var rgRules = program{
	links: followsWith('L', "--fol"),
	form: func(_ string, args []string) string {
		for _, a := range args {
			if a == "--pre" || strings.HasPrefix(a, "--pre=") {
				return "rg --pre runs a preprocessor command"
			}
		}
		return ""
	},
}

var sortRules = program{form: func(_ string, args []string) string {
	for _, a := range args {
		if abbrevOf(a, "compress-program", 2) { // --c is also --check
			return "sort --compress-program runs a program"
		}
	}
	return ""
}}

var treeRules = program{
	links: followsWith('l', "--follow"),
	form: func(_ string, args []string) string {
		for _, a := range args {
			if a == "-o" || strings.HasPrefix(a, "-o") && len(a) > 2 {
				return "tree -o writes a file"
			}
		}
		return ""
	},
}

// hasShortOrLong reports whether args hold the short option (alone or in a
// cluster) or a long option starting with long (getopt_long accepts
// abbreviations).
func hasShortOrLong(args []string, short byte, long string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, long) ||
			!strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

// abbrevOf reports whether a is --long, or an abbreviation of it of at least
// min letters (getopt_long and git's parse-options both take one), with or
// without =value.
func abbrevOf(a, long string, min int) bool {
	name, ok := strings.CutPrefix(a, "--")
	if !ok {
		return false
	}
	name, _, _ = strings.Cut(name, "=")
	return len(name) >= min && strings.HasPrefix(long, name)
}

// firstOperand returns the first argument that is not an option.
func firstOperand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

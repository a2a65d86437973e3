package rules

// The command rules as they were before the shell parser (a hand-written
// tokenizer and a scan for metacharacters), kept unchanged as the reference
// FuzzCommandRulesAgreeWithOldClassifier compares the new rules with.
// Identifiers carry an "old" prefix; splitWords and shellWord keep their names
// because FuzzClassifyCommand uses them.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// oldChainChars are refused anywhere in a command, quoted or not: chaining,
// redirection, command and variable substitution. "$" alone is included
// because $HOME or $ANTHROPIC_AUTH_TOKEN expand to paths and secrets the rules
// cannot see.
var oldChainChars = []struct{ s, name string }{
	{";", "chaining (;)"}, {"&", "chaining or background (&)"}, {"|", "a pipe (|)"},
	{"<", "redirection (<)"}, {">", "redirection (>)"}, {"\n", "a newline"}, {"\r", "a carriage return"},
	{"`", "command substitution (`)"}, {"$(", "command substitution ($()"}, {"${", "parameter expansion (${)"},
	{"$", "variable expansion ($)"},
}

// oldWrappers run another program or inline code, so the allow list would not
// mean anything after them; they always go to a human, even when listed.
var oldWrappers = []string{
	"sudo", "su", "doas", "env", "xargs", "nohup", "timeout", "nice", "ionice", "stdbuf", "chroot",
	"setsid", "exec", "eval", "command", "builtin", "time", "watch", "strace", "ltrace", "unshare",
	"nsenter", "busybox", "npx", "bunx", "pnpx", "sh", "bash", "zsh", "dash", "ksh", "fish", "csh",
	"tcsh", "source", ".", "flock", "script", "parallel",
}

// oldClassifyCommand applies the command rules to one shell command line:
// it runs unattended only when its first word is on the allow list, it has no
// chaining, redirection or substitution, its program is not given by a path,
// it is not a dangerous form of an allowed program, and none of its arguments
// names a path outside the workspace or a .env file. An empty command is
// denied; a command naming a protected path is denied; everything else goes
// to a human.
func oldClassifyCommand(cmd string, p Policy) Verdict {
	v := oldVerdict(cmd, p)
	v.Summary = Clip(cmd)
	return v
}

func oldVerdict(cmd string, p Policy) Verdict {
	if strings.TrimSpace(cmd) == "" {
		return Verdict{Decision: Deny, Reason: "empty command: there is nothing to run"}
	}
	for _, c := range oldChainChars {
		if strings.Contains(cmd, c.s) {
			return Verdict{Decision: Ask, Reason: "the command contains " + c.name + ": a human decides"}
		}
	}
	for _, r := range cmd {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return Verdict{Decision: Ask, Reason: "the command contains a control character: a human decides"}
		}
	}
	words, err := splitWords(cmd)
	if err != nil {
		return Verdict{Decision: Ask, Reason: "the command cannot be parsed (" + err.Error() + "): a human decides"}
	}
	if len(words) == 0 {
		return Verdict{Decision: Deny, Reason: "empty command: there is nothing to run"}
	}
	for _, w := range words {
		if w.subshell {
			return Verdict{Decision: Ask, Reason: "the command contains a subshell or grouping ( ): a human decides"}
		}
		if w.brace {
			return Verdict{Decision: Ask, Reason: "the command uses brace expansion {a,b}: a human decides"}
		}
	}
	prog := words[0].text
	if strings.ContainsAny(prog, `/\`) {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("the program is given by a path (%s): a human decides", prog)}
	}
	name := oldNormalizeProgram(prog)
	if slices.Contains(oldWrappers, name) {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s runs another program or inline code: a human decides", name)}
	}
	if !oldOnAllowList(name, p.Allow) {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s is not on the allow list (BRIDGE_APPROVE_ALLOW): a human decides", name)}
	}
	args := make([]string, len(words)-1)
	for i, w := range words[1:] {
		args[i] = w.text
	}
	if (name == "sed" || name == "gsed") && bsdSed {
		var why string
		if args, why = oldBsdSedArgs(args); why != "" {
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s: a human decides", why)}
		}
	}
	if why := oldDangerousForm(name, args); why != "" {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s: a human decides", why)}
	}
	g := sandbox.Guard{Workspace: p.Workspace, Protected: p.Protected}
	programs := oldNotPaths(name, args)
	for i, a := range args {
		if programs[i] {
			continue
		}
		for _, c := range oldPathCandidates(a) {
			d := g.Admit(c)
			if d.Protected {
				return Verdict{Decision: Deny, Reason: d.Reason + " (its state dir, its .env or a credential store): no job may touch it"}
			}
			if !d.Inside {
				return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q: %s: a human decides", a, d.Reason)}
			}
			if namesDotEnv(c, p.Workspace) || namesDotEnv(d.Resolved, p.Workspace) {
				return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q mentions a .env file, which usually holds secrets: a human decides", a)}
			}
			if v, bad := oldGlobMatches(g, a, c, p.Workspace); bad {
				return v
			}
		}
	}
	return Verdict{Decision: Allow, Reason: fmt.Sprintf("%s is on the allow list, with no dangerous form, and every path argument is inside the workspace", name)}
}

// oldMaxGlobMatches bounds the files one glob argument is checked against.
const oldMaxGlobMatches = 4096

// oldGlobMatches checks what the shell would expand a glob argument to: every
// match must be inside the workspace (a wildcard may match a symlink that
// leads out, which the pattern's non-glob prefix does not show) and must not
// name a .env file. Quoting is not tracked, so a quoted pattern is checked
// as if it were expanded.
func oldGlobMatches(g sandbox.Guard, arg, c, workspace string) (Verdict, bool) {
	if !strings.ContainsAny(c, "*?[") {
		return Verdict{}, false
	}
	pattern := c
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(workspace, pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q is a malformed glob (%v): a human decides", arg, err)}, true
	}
	if len(matches) > oldMaxGlobMatches {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches more than %d files: a human decides", arg, oldMaxGlobMatches)}, true
	}
	for _, m := range matches {
		d := g.Admit(m)
		switch {
		case d.Protected:
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("argument %q matches %s (its state dir, its .env or a credential store): no job may touch it", arg, d.Reason)}, true
		case !d.Inside:
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches %s: %s: a human decides", arg, m, d.Reason)}, true
		case namesDotEnv(m, workspace) || namesDotEnv(d.Resolved, workspace):
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches %s, a .env file, which usually holds secrets: a human decides", arg, m)}, true
		}
	}
	return Verdict{}, false
}

// oldNormalizeProgram makes program names case- and extension-insensitive:
// NODE.EXE and node are the same program.
func oldNormalizeProgram(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".com"} {
		if t, ok := strings.CutSuffix(s, ext); ok && t != "" {
			return t
		}
	}
	return s
}

func oldOnAllowList(name string, allow []string) bool {
	for _, a := range allow {
		if a = oldNormalizeProgram(a); a != "" && a == name {
			return true
		}
	}
	return false
}

// oldMaxOptionSuffixes bounds the suffixes tried for one short-option word.
const oldMaxOptionSuffixes = 256

// oldPathCandidates returns the strings in one argument that could be taken as a
// path: the word itself, the value of --opt=VALUE, every tail of a short
// option cluster (-f/etc/passwd), and the pieces between = : and ,.
func oldPathCandidates(w string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(w)
	if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") {
		for i := 2; i < len(w) && i < oldMaxOptionSuffixes; i++ {
			add(w[i:])
		}
	}
	for _, piece := range strings.FieldsFunc(w, func(r rune) bool { return r == '=' || r == ':' || r == ',' }) {
		add(piece)
	}
	return out
}

type shellWord struct {
	text     string
	brace    bool // an unquoted { with , or .. after it: brace expansion
	subshell bool // an unquoted ( or )
}

var errUnbalancedQuote = errors.New("unbalanced quotes")

// splitWords splits a command line into words the way a POSIX shell would for
// the subset the rules accept (no substitutions, no redirections): blanks
// separate words, single quotes are literal, double quotes and backslashes
// escape.
func splitWords(s string) ([]shellWord, error) {
	var words []shellWord
	var cur strings.Builder
	var w shellWord
	inWord := false
	braceOpen := false
	flush := func() {
		if inWord {
			w.text = cur.String()
			words = append(words, w)
		}
		cur.Reset()
		w = shellWord{}
		inWord, braceOpen = false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errUnbalancedQuote
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errUnbalancedQuote
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			switch c {
			case '(', ')':
				w.subshell = true
			case '{':
				braceOpen = true
			case ',':
				if braceOpen {
					w.brace = true
				}
			case '.':
				if braceOpen && i+1 < len(s) && s[i+1] == '.' {
					w.brace = true
				}
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// oldDangerousForm names why an invocation of an allowed program must still go
// to a human, or returns "".
func oldDangerousForm(name string, args []string) string {
	for _, a := range args {
		// sort, wc, du and find read the names of the files to open from a
		// list file; the rules never see those names.
		if strings.Contains(a, "files0-from") {
			return name + " " + a + " reads a list of file names the rules cannot check"
		}
	}
	if why := oldFollowsLinks(name, args); why != "" {
		return why
	}
	switch name {
	case "node", "nodejs", "deno", "bun":
		return oldNodeForm(name, args)
	case "npm":
		return oldNpmForm(args)
	case "git":
		return oldGitForm(args)
	case "find":
		for _, a := range args {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				return "find " + a + " runs commands, deletes or writes files"
			}
		}
	case "python", "python3", "python2", "pypy", "pypy3":
		return oldPythonForm(name, args)
	case "sed", "gsed":
		return oldSedForm(args)
	case "awk", "gawk", "mawk", "nawk":
		return oldAwkForm(name, args)
	case "make", "gmake":
		for _, a := range args {
			if strings.HasPrefix(a, "--ev") || !strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.Contains(a, "E") {
				return "make --eval evaluates inline makefile text"
			}
		}
	case "go":
		return oldGoForm(args)
	case "cargo":
		for _, a := range args {
			if a == "--config" || strings.HasPrefix(a, "--config=") || a == "-Z" {
				return "cargo " + a + " changes what cargo runs"
			}
		}
		if sub := oldFirstOperand(args); slices.Contains([]string{"install", "uninstall", "publish", "login", "logout", "owner", "yank", "add", "remove", "fetch", "update", "search"}, sub) {
			return "cargo " + sub + " installs, publishes or fetches crates"
		}
	case "rustc":
		for _, a := range args {
			if strings.Contains(a, "linker") {
				return "rustc -C linker runs a program of the job's choosing"
			}
			if strings.HasPrefix(a, "@") {
				return "rustc @file reads more options (a -C linker among them) from a file the rules cannot see"
			}
		}
	case "rg":
		for _, a := range args {
			if a == "--pre" || strings.HasPrefix(a, "--pre=") {
				return "rg --pre runs a preprocessor command"
			}
		}
	case "sort":
		for _, a := range args {
			if oldAbbrevOf(a, "compress-program", 3) {
				return "sort --compress-program runs a program"
			}
		}
	case "tree":
		for _, a := range args {
			if a == "-o" || strings.HasPrefix(a, "-o") && len(a) > 2 {
				return "tree -o writes a file"
			}
		}
	}
	return ""
}

// oldFollowsLinks names a recursive read or copy that follows symlinks met on
// the way down: every argument may be inside the workspace while a link
// below it (planted, or checked out by git) leads outside, where the OS
// sandbox only hides the state dir, .env and credential stores.
func oldFollowsLinks(name string, args []string) string {
	var short byte
	var long string
	switch name {
	case "grep", "egrep", "fgrep":
		short, long = 'R', "--der"
	case "rg":
		short, long = 'L', "--fol"
	case "cp":
		short, long = 'L', "--der"
	case "find":
		// -L and -follow follow every link met below the starting points
		// (-H only the starting points, which the rules admit).
		for _, a := range args {
			if a == "-L" || a == "-follow" {
				return "find " + a + " follows symlinks below its arguments, which may lead outside the workspace"
			}
		}
		return ""
	case "ls":
		// -L alone dereferences the named paths, which the rules admit; with
		// -R it lists the trees behind links met on the way down.
		if oldHasShortOrLong(args, 'L', "--der") && oldHasShortOrLong(args, 'R', "--rec") {
			return "ls -L -R lists the trees behind symlinks below its arguments, which may lead outside the workspace"
		}
		return ""
	case "tree":
		short, long = 'l', "--follow"
	case "du":
		short, long = 'L', "--der"
	case "diff":
		// diff dereferences symlinks unless told not to; with -N it prints
		// a file found on one side only in full.
		for _, a := range args {
			if strings.HasPrefix(a, "--no-d") {
				return ""
			}
		}
		short, long = 'r', "--rec"
	default:
		return ""
	}
	for _, a := range args {
		if oldHasShortOrLong([]string{a}, short, long) {
			return name + " " + a + " follows symlinks below its arguments, which may lead outside the workspace"
		}
	}
	return ""
}

// oldHasShortOrLong reports whether args hold the short option (alone or in a
// cluster) or a long option starting with long (getopt_long accepts
// abbreviations).
func oldHasShortOrLong(args []string, short byte, long string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, long) ||
			!strings.HasPrefix(a, "--") && strings.HasPrefix(a, "-") && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

func oldNodeForm(name string, args []string) string {
	for _, a := range args {
		switch {
		case a == "-":
			return name + " - runs code from stdin"
		case a == "--eval" || a == "--print" || strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print="):
			return name + " " + a + " runs inline code"
		case strings.HasPrefix(a, "--require") || strings.HasPrefix(a, "--import") || strings.HasPrefix(a, "--loader") ||
			strings.HasPrefix(a, "--experimental-loader") || strings.HasPrefix(a, "--inspect") || strings.HasPrefix(a, "--interactive"):
			return name + " " + a + " loads code or opens a debugger"
		case name == "deno" || name == "bun":
			if a == "eval" || a == "-e" || a == "x" || a == "install" || a == "add" {
				return name + " " + a + " runs inline code or installs packages"
			}
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "epri"):
			return name + " " + a + " runs inline code"
		}
	}
	return ""
}

// oldNpmSafe are npm subcommands that run the project's own scripts or only read.
var oldNpmSafe = []string{"run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart",
	"ls", "list", "la", "ll", "why", "explain", "help", "prefix", "root"}

// oldNpmRunner are npm options (nopt also takes any unambiguous abbreviation)
// that choose the program npm runs, or a config file that can.
var oldNpmRunner = []string{"script-shell", "shell", "browser", "viewer", "editor", "node-options", "userconfig", "globalconfig"}

func oldNpmForm(args []string) string {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || len(name) < 2 {
			continue
		}
		for _, r := range oldNpmRunner {
			if strings.HasPrefix(r, name) {
				return "npm --" + r + " chooses the program npm runs or its config"
			}
		}
	}
	sub := oldFirstOperand(args)
	if sub == "" || slices.Contains(oldNpmSafe, sub) {
		return ""
	}
	return "npm " + sub + " can install, publish or run packages from the registry"
}

// oldGitSafe are local git subcommands; anything else (push, fetch, clone,
// config, remote, credential, submodule, send-email, daemon, filter-branch,
// difftool, hook, …) goes to a human.
var oldGitSafe = []string{"status", "log", "diff", "show", "add", "commit", "checkout", "switch", "restore",
	"branch", "tag", "merge", "rebase", "reset", "stash", "rm", "mv", "init", "blame", "grep", "ls-files",
	"ls-tree", "rev-parse", "rev-list", "describe", "shortlog", "cherry-pick", "revert", "apply",
	"format-patch", "am", "clean", "cat-file", "show-ref", "for-each-ref", "reflog", "worktree", "notes",
	"bisect", "version", "help", "merge-base", "name-rev", "whatchanged", "range-diff", "cherry", "count-objects",
	"check-ignore", "check-attr", "var", "diff-tree", "diff-files", "diff-index", "annotate"}

// oldGitValueOpts are git's global options that take the next word as a value.
var oldGitValueOpts = []string{"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}

func oldGitForm(args []string) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "-c" || strings.HasPrefix(a, "-c") && len(a) > 2 || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path") {
			return "git " + a + " changes git's configuration for this call"
		}
		if slices.Contains(oldGitValueOpts, a) {
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
	if !slices.Contains(oldGitSafe, sub) {
		return "git " + sub + " is not a known local git command (push, config, fetch and the like go to a human)"
	}
	for _, a := range rest {
		switch {
		case sub == "rebase" && (strings.HasPrefix(a, "-x") || oldAbbrevOf(a, "exec", 2)):
			return "git rebase --exec runs commands"
		case sub == "bisect" && a == "run":
			return "git bisect run runs commands"
		case sub == "grep" && (a == "-O" || strings.HasPrefix(a, "-O") || oldAbbrevOf(a, "open-files-in-pager", 2)):
			return "git grep --open-files-in-pager runs a program"
		case strings.HasPrefix(a, "--unsafe"):
			return "git " + sub + " " + a + " writes outside the work tree"
		case a == "--upload-pack" || strings.HasPrefix(a, "--upload-pack=") || strings.HasPrefix(a, "--receive-pack") || strings.HasPrefix(a, "--exec="):
			return "git " + a + " runs a program"
		}
	}
	return ""
}

func oldPythonForm(name string, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" {
			return name + " - runs code from stdin"
		}
		if !strings.HasPrefix(a, "-") || a == "--" {
			return "" // the script; what follows are its own arguments
		}
		if strings.HasPrefix(a, "--") {
			if a == "--check-hash-based-pycs" {
				i++ // the one long option that takes the next word as its value
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				return name + " -c runs inline code"
			case 'm':
				mod := a[j+1:]
				if mod == "" && i+1 < len(args) {
					mod = args[i+1]
				}
				if mod == "timeit" || mod == "pdb" {
					return name + " -m " + mod + " runs inline code from its arguments"
				}
				for _, bad := range []string{"pip", "ensurepip", "http.server", "smtpd", "venv", "site"} {
					if mod == bad || strings.HasPrefix(mod, bad+".") || bad == "pip" && strings.HasPrefix(mod, "pip") {
						return name + " -m " + mod + " installs packages, serves files or changes the environment"
					}
				}
				return ""
			case 'W', 'X':
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			}
		}
	}
	return ""
}

func oldGoForm(args []string) string {
	sub := oldFirstOperand(args)
	for i, a := range args {
		flag, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && (flag == "exec" || flag == "toolexec" || flag == "vettool"):
			return "go " + a + " runs an arbitrary program"
		case sub == "env" && (a == "-w" || a == "-u"):
			return "go env " + a + " changes the user's Go configuration"
		case i == 0 && (sub == "get" || sub == "install"):
			return "go " + sub + " downloads and installs code"
		}
	}
	return ""
}

// oldSedForm allows sed, including -i (an in-place edit is what Edit does inside
// the workspace, and every file argument is path-checked), but sends to a
// human any script file (-f) and any script that can run a command, read or
// write a file (e, w, W, r, R commands; the e and w flags of s).
func oldSedForm(args []string) string {
	scripts, _, fromFile := oldSedScripts(args)
	if fromFile {
		return "sed -f runs a script file"
	}
	for _, s := range scripts {
		if !oldSedScriptSafe(s) {
			return fmt.Sprintf("sed script %q may run a command or read or write a file", s)
		}
	}
	return ""
}

// oldSedScripts finds sed's scripts: -e/--expression values (long options may
// be abbreviated, as getopt_long allows: --expr, --e), or else the first
// operand. The value of -l/--line-length is skipped as GNU sed does, but is
// also checked as a script in case a sed reads -l without a value. at holds
// the indexes of the arguments that carry them.
func oldSedScripts(args []string) (scripts []string, at map[int]bool, fromFile bool) {
	at = map[int]bool{}
	explicit := false
	script := func(i int, s string, counts bool) {
		scripts, at[i] = append(scripts, s), true
		explicit = explicit || counts
	}
	operandsOnly := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case operandsOnly || a == "-" || !strings.HasPrefix(a, "-"):
			if !explicit {
				script(i, a, true)
			}
		case a == "--":
			operandsOnly = true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			switch {
			case strings.HasPrefix("expression", name):
				if hasVal {
					script(i, val, true)
				} else if i+1 < len(args) {
					script(i+1, args[i+1], true)
					i++
				}
				explicit = true
			case strings.HasPrefix("file", name):
				return nil, nil, true
			case strings.HasPrefix("line-length", name) && !hasVal:
				if i+1 < len(args) {
					script(i+1, args[i+1], false)
				}
				i++
			}
		default:
			for j := 1; j < len(a); j++ {
				rest := a[j+1:]
				switch a[j] {
				case 'e':
					if rest != "" {
						script(i, rest, true)
					} else if i+1 < len(args) {
						script(i+1, args[i+1], true)
						i++
					}
					explicit = true
				case 'f':
					return nil, nil, true
				case 'l':
					if rest == "" && i+1 < len(args) {
						script(i+1, args[i+1], false)
						i++
					}
				case 'i':
					// the rest of the word is the backup suffix
				default:
					continue
				}
				break
			}
		}
	}
	return scripts, at, false
}

// bsdSed is shared with the new rules, so both read the same sed dialect.

// oldBsdSedArgs rewrites a BSD sed command line to the GNU one the rules
// understand: the only in-place form it accepts is `-i ""` (no backup), whose
// empty suffix it removes. Any other -i goes to a human, because which word
// is the suffix, which the script and which a file then depends on the sed,
// and a suffix is a path the backup is written to.
func oldBsdSedArgs(args []string) ([]string, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return args, "" // BSD getopt stops at the first operand
		}
		if strings.HasPrefix(a, "--") {
			continue // BSD sed has no long options; GNU rules check them
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'e', 'f', 'l':
				if j == len(a)-1 {
					i++ // the value is the next argument
				}
			case 'i':
				if j < len(a)-1 || i+1 >= len(args) || args[i+1] != "" {
					return nil, "sed -i with a backup suffix (BSD sed takes the next word as the suffix)"
				}
				out := append(append([]string{}, args[:i+1]...), args[i+2:]...)
				return out, ""
			default:
				continue
			}
			break
		}
	}
	return args, ""
}

// oldNotPaths returns the indexes of arguments that are programs, not paths:
// sed scripts (checked whole by oldSedScriptSafe, so a /regex/ address is not
// mistaken for an absolute path) and an awk program (checked for oldAwkDanger).
func oldNotPaths(name string, args []string) map[int]bool {
	switch name {
	case "sed", "gsed":
		_, at, _ := oldSedScripts(args)
		return at
	case "awk", "gawk", "mawk", "nawk":
		for i, a := range args {
			if !strings.HasPrefix(a, "-") {
				return map[int]bool{i: true}
			}
			if a == "-F" || a == "-v" || a == "--field-separator" || a == "--assign" {
				return nil // an option value could be taken for the program: check everything
			}
		}
	}
	return nil
}

// oldSedScriptSafe accepts one sed command (separators are refused earlier) made
// of an optional address and one of s, y, or a command from a harmless set.
func oldSedScriptSafe(s string) bool {
	s = strings.TrimSpace(s)
	i := oldSkipSedAddress(s, 0)
	if i < 0 {
		return false
	}
	if i < len(s) && s[i] == ',' {
		if i = oldSkipSedAddress(s, i+1); i < 0 {
			return false
		}
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '!') {
		i++
	}
	if i >= len(s) {
		return true
	}
	switch cmd := s[i]; cmd {
	case 's', 'y':
		if i+1 >= len(s) {
			return false
		}
		delim := s[i+1]
		if delim == '\\' || delim == ' ' {
			return false
		}
		j := i + 2
		for part := 0; part < 2; part++ {
			for j < len(s) && s[j] != delim {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return false
			}
			j++
		}
		flags := strings.TrimSpace(s[j:])
		if cmd == 'y' {
			return flags == ""
		}
		return strings.Trim(flags, "gpiImM0123456789") == ""
	case 'p', 'd', 'D', 'q', 'Q', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'l', '=', 'P', 'z':
		return strings.Trim(s[i+1:], " 0123456789") == ""
	}
	return false
}

// oldSkipSedAddress skips a line number, "$" is refused earlier, or a /regex/
// address starting at i; it returns the index after it, or -1 if malformed.
func oldSkipSedAddress(s string, i int) int {
	switch {
	case i < len(s) && s[i] >= '0' && s[i] <= '9':
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
			i++
		}
	case i < len(s) && s[i] == '/':
		i++
		for i < len(s) && s[i] != '/' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(s) {
			return -1
		}
		i++
		for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
			i++
		}
	}
	return i
}

// oldAwkDanger are awk words that run commands, read other files or the
// environment.
var oldAwkDanger = []string{"system", "getline", "ENVIRON", "ARGV", "ARGC", "PROCINFO", "close", "fflush", "@load", "@include"}

func oldAwkForm(name string, args []string) string {
	for _, a := range args {
		if a == "-f" || a == "-E" || a == "-l" || a == "-i" ||
			oldAbbrevOf(a, "file", 3) || oldAbbrevOf(a, "exec", 1) || oldAbbrevOf(a, "load", 2) || oldAbbrevOf(a, "include", 2) {
			return name + " " + a + " runs a program file or extension"
		}
		for _, d := range oldAwkDanger {
			if strings.Contains(a, d) {
				return name + " program uses " + d
			}
		}
		for i := 0; i+1 < len(a); i++ {
			if a[i] == '@' && (a[i+1] == '_' || unicode.IsLetter(rune(a[i+1]))) {
				return name + " program uses @name, a gawk indirect call that can reach system() without naming it"
			}
		}
	}
	return ""
}

// oldAbbrevOf reports whether a is --long, or an abbreviation of it of at least
// min letters (getopt_long and git's parse-options both take one), with or
// without =value.
func oldAbbrevOf(a, long string, min int) bool {
	name, ok := strings.CutPrefix(a, "--")
	if !ok {
		return false
	}
	name, _, _ = strings.Cut(name, "=")
	return len(name) >= min && strings.HasPrefix(long, name)
}

// oldFirstOperand returns the first argument that is not an option.
func oldFirstOperand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

package rules

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/sandbox"
)

// wrappers run another program or inline code, so the allow list would not
// mean anything after them; they always go to a human, even when listed.
var wrappers = []string{
	"sudo", "su", "doas", "env", "xargs", "nohup", "timeout", "nice", "ionice", "stdbuf", "chroot",
	"setsid", "exec", "eval", "command", "builtin", "time", "watch", "strace", "ltrace", "unshare",
	"nsenter", "busybox", "npx", "bunx", "pnpx", "sh", "bash", "zsh", "dash", "ksh", "fish", "csh",
	"tcsh", "source", ".", "flock", "script", "parallel",
}

// ClassifyCommand applies the command rules to one shell command line:
// it runs unattended only when it is one simple command (no chaining,
// redirection, substitution or other shell syntax, see parseCommand), its
// first word is on the allow list, its program is not given by a path, it is
// not a dangerous form of an allowed program (see programs), and none of its
// arguments names a path outside the workspace or a .env file. An empty
// command is denied; a command naming a protected path is denied, and so is
// one that writes a path other programs run later outside any sandbox
// (plantsRunLater); everything else goes to a human.
func ClassifyCommand(cmd string, p Policy) Verdict {
	p = p.budgeted()
	v := overBudget(classifyCommand(cmd, p), p)
	v.Summary = Clip(cmd)
	return v
}

func classifyCommand(cmd string, p Policy) Verdict {
	if strings.TrimSpace(cmd) == "" {
		return Verdict{Decision: Deny, Reason: "empty command: there is nothing to run"}
	}
	pc := parseCommand(cmd)
	if v, denied := plantsRunLater(pc, p); denied {
		return v
	}
	if pc.why != "" {
		return Verdict{Decision: Ask, Reason: pc.why}
	}
	v := classifyWords(pc.words, p)
	if pc.commented && v.Decision != Deny {
		return Verdict{Decision: Ask, Reason: "the command contains a comment (#): a human decides"}
	}
	return v
}

// classifyWords applies the rules to the words of one simple command.
func classifyWords(words []word, p Policy) Verdict {
	if len(words) == 0 {
		return Verdict{Decision: Deny, Reason: "empty command: there is nothing to run"}
	}
	prog := words[0].text
	if strings.ContainsAny(prog, `/\`) {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("the program is given by a path (%s): a human decides", prog)}
	}
	folded := normalizeProgram(prog)
	if slices.Contains(wrappers, folded) {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s runs another program or inline code: a human decides", folded)}
	}
	name := programName(prog)
	if !onAllowList(name, p.Allow) {
		if !onAllowList(folded, p.Allow) {
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("%s is not on the allow list (BRIDGE_APPROVE_ALLOW): a human decides", folded)}
		}
		// Listed only when folded (HEAD, 'ls '): checked as the listed
		// program, so a protected path is still denied, but never allowed.
		if v := checkArgs(folded, words[1:], p); v.Decision == Deny {
			return v
		}
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%q is not spelled as on the allow list (case, spaces or an extension differ, and may name another program): a human decides", prog)}
	}
	return checkArgs(name, words[1:], p)
}

// checkArgs applies the rules of the allow-listed program name to its
// arguments. A protected path anywhere among them denies the command, even
// when something else would send it to a human first.
func checkArgs(name string, words []word, p Policy) Verdict {
	var held *Verdict // the first reason the command goes to a human
	hold := func(v Verdict) {
		if held == nil {
			held = &v
		}
	}
	rule := programs[name]
	if rule.rewrite != nil {
		drop, why := rule.rewrite(texts(words))
		if why != "" {
			hold(Verdict{Decision: Ask, Reason: fmt.Sprintf("%s: a human decides", why)})
		} else if drop >= 0 {
			words = slices.Delete(slices.Clone(words), drop, drop+1)
		}
	}
	args := texts(words)
	if why := dangerousForm(name, args); why != "" {
		hold(Verdict{Decision: Ask, Reason: fmt.Sprintf("%s: a human decides", why)})
	}
	g := sandbox.Guard{Workspace: p.Workspace, Protected: p.Protected}
	code := notPaths(name, args)
	for i, a := range args {
		if code[i] {
			continue
		}
		candidates, ok := pathCandidates(a)
		if !ok {
			hold(Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %d is an option cluster of %d bytes, longer than the %d the rules check: a human decides", i+1, len(a), maxOptionCluster)})
		}
		for _, c := range candidates {
			d := admit(g, c)
			switch {
			case d.Protected:
				return Verdict{Decision: Deny, Reason: d.Reason + protectedWhy}
			case !d.Inside:
				hold(Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q: %s: a human decides", a, d.Reason)})
				continue // an outside pattern is not expanded
			case namesDotEnv(c, p.Workspace) || namesDotEnv(d.Resolved, p.Workspace):
				hold(Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q mentions a .env file, which usually holds secrets: a human decides", a)})
			}
			if v, bad := globMatches(g, a, c, p); bad {
				if v.Decision == Deny {
					return v
				}
				hold(v)
			}
		}
	}
	if v, bad := unseenExpansions(words, code, p); bad {
		hold(v)
	}
	if held != nil {
		return *held
	}
	return Verdict{Decision: Allow, Reason: fmt.Sprintf("%s is on the allow list, with no dangerous form, and every path argument is inside the workspace", name)}
}

// maxGlobMatches bounds the files one glob argument is checked against.
const maxGlobMatches = 4096

// globMatches checks what the shell would expand a glob argument to: every
// match must be inside the workspace (a wildcard may match a symlink that
// leads out, which the pattern's non-glob prefix does not show) and must not
// name a .env file. A quoted pattern is checked as if it were expanded too: a
// program such as find expands it itself.
func globMatches(g sandbox.Guard, arg, c string, p Policy) (Verdict, bool) {
	if !strings.ContainsAny(c, "*?[") {
		return Verdict{}, false
	}
	workspace := p.Workspace
	matches, why, err := globFiles(c, workspace, p.globs)
	if why != "" {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q %s: a human decides", arg, why)}, true
	}
	// Past the budget its matches go unchecked, a protected path among them
	// too: the command is refused, not shown to a person as if checked.
	overBudget := func() Verdict {
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("argument %q: %v in one call (%d), so they cannot be checked for protected paths: name fewer files", arg, errGlobWork, maxGlobWork)}
	}
	if errors.Is(err, errGlobWork) {
		return overBudget(), true
	}
	if err != nil {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q is a malformed glob (%v): a human decides", arg, err)}, true
	}
	if len(matches) > maxGlobMatches {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches more than %d files: a human decides", arg, maxGlobMatches)}, true
	}
	for _, m := range matches {
		if !p.globs.spend(admitWork) {
			return overBudget(), true
		}
		d := admit(g, m)
		switch {
		case d.Protected:
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("argument %q matches %s", arg, d.Reason) + protectedWhy}, true
		case !d.Inside:
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches %s: %s: a human decides", arg, m, d.Reason)}, true
		case namesDotEnv(m, workspace) || namesDotEnv(d.Resolved, workspace):
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("argument %q matches %s, a .env file, which usually holds secrets: a human decides", arg, m)}, true
		}
	}
	return Verdict{}, false
}

// texts returns the words as the program receives them.
func texts(words []word) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out
}

// programName is the name the rules know the program by: on Windows, which
// finds NODE.EXE as node, lower-cased and without its extension; elsewhere
// the word itself, byte for byte, because the system looks it up that way
// (HEAD is lwp-request, not head; "ls " and LS are not ls).
func programName(word string) string {
	if runtime.GOOS != "windows" {
		return word
	}
	s := strings.ToLower(word)
	for _, ext := range []string{".exe", ".cmd", ".bat", ".com"} {
		if t, ok := strings.CutSuffix(s, ext); ok && t != "" {
			return t
		}
	}
	return s
}

// normalizeProgram makes names case- and extension-insensitive, for the
// owner's allow list (Make.EXE lists make), for the wrappers and for what a
// human is shown; a command's own word is matched by programName.
func normalizeProgram(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".com"} {
		if t, ok := strings.CutSuffix(s, ext); ok && t != "" {
			return t
		}
	}
	return s
}

func onAllowList(name string, allow []string) bool {
	for _, a := range allow {
		if a = normalizeProgram(a); a != "" && a == name {
			return true
		}
	}
	return false
}

// maxOptionCluster bounds the short-option words (-abc…) the rules check:
// every tail of one is a path candidate, and checking them all costs the
// square of the word's length. A longer cluster goes to a human. (A cap on
// the tails checked instead left the words past it unchecked: a value
// attached after 300 letters was never seen, and only the kernel's refusal
// of a 256-byte name in the whole word sent most such words to a human.)
const maxOptionCluster = 1024

// pathCandidates returns the strings in one argument that could be taken as a
// path: the word itself, the value of --opt=VALUE, every tail of a short
// option cluster (-f/etc/passwd), and the pieces between = : and ,. ok is
// false for a cluster longer than maxOptionCluster.
func pathCandidates(w string) (candidates []string, ok bool) {
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			candidates = append(candidates, s)
		}
	}
	add(w)
	if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") {
		if len(w) > maxOptionCluster {
			return nil, false
		}
		for i := 2; i < len(w); i++ {
			add(w[i:])
		}
	}
	for _, piece := range strings.FieldsFunc(w, func(r rune) bool { return r == '=' || r == ':' || r == ',' }) {
		add(piece)
	}
	return candidates, true
}

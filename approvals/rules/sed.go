package rules

import (
	"fmt"
	"runtime"
	"strings"
)

// sedRules: an edit runs unattended, in place too; a script that can run a
// command or read or write a file goes to a human. Scripts are checked whole
// (code), not as paths.
var sedRules = program{
	rewrite: func(args []string) (int, string) {
		if !bsdSed {
			return -1, ""
		}
		return bsdSedArgs(args)
	},
	form: func(_ string, args []string) string { return sedForm(args) },
	code: func(args []string) map[int]bool {
		_, at, _ := sedScripts(args)
		return at
	},
}

// sedForm allows sed, including -i (an in-place edit is what Edit does inside
// the workspace, and every file argument is path-checked), but sends to a
// human any script file (-f) and any script that can run a command, read or
// write a file (e, w, W, r, R commands; the e and w flags of s).
func sedForm(args []string) string {
	scripts, _, fromFile := sedScripts(args)
	if fromFile {
		return "sed -f runs a script file"
	}
	for _, s := range scripts {
		if !sedScriptSafe(s) {
			return fmt.Sprintf("sed script %q may run a command or read or write a file", s)
		}
	}
	return ""
}

// sedScripts finds sed's scripts: -e/--expression values (long options may
// be abbreviated, as getopt_long allows: --expr, --e), or else the first
// operand. The value of -l/--line-length is skipped as GNU sed does, but is
// also checked as a script in case a sed reads -l without a value. at holds
// the indexes of the arguments that carry them.
func sedScripts(args []string) (scripts []string, at map[int]bool, fromFile bool) {
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

// bsdSed is true where `sed` is BSD sed (macOS, the BSDs), whose -i takes
// the backup suffix as a separate argument: `sed -i "" 's/a/b/' f` there is
// `sed -i 's/a/b/' f` in GNU sed, and the rules below model GNU sed. A test
// may set it.
var bsdSed = runtime.GOOS == "darwin" || runtime.GOOS == "dragonfly" || strings.HasSuffix(runtime.GOOS, "bsd")

// bsdSedArgs reads a BSD sed command line as the GNU one the rules
// understand: the only in-place form it accepts is `-i ""` (no backup), whose
// empty suffix it returns the index of, to be dropped. Any other -i goes to a
// human, because which word is the suffix, which the script and which a file
// then depends on the sed, and a suffix is a path the backup is written to.
func bsdSedArgs(args []string) (drop int, why string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return -1, "" // BSD getopt stops at the first operand
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
					return -1, "sed -i with a backup suffix (BSD sed takes the next word as the suffix)"
				}
				return i + 1, ""
			default:
				continue
			}
			break
		}
	}
	return -1, ""
}

// sedScriptSafe accepts one sed command (separators are refused earlier) made
// of an optional address and one of s, y, or a command from a harmless set.
func sedScriptSafe(s string) bool {
	s = strings.TrimSpace(s)
	i := skipSedAddress(s, 0)
	if i < 0 {
		return false
	}
	if i < len(s) && s[i] == ',' {
		if i = skipSedAddress(s, i+1); i < 0 {
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

// skipSedAddress skips a line number, "$" is refused earlier, or a /regex/
// address starting at i; it returns the index after it, or -1 if malformed.
func skipSedAddress(s string, i int) int {
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

package rules

import (
	"fmt"
	"runtime"
	"strings"
)

// sedRules: an edit runs unattended, in place too; a script that can run a
// command or read or write a file goes to a human. Scripts are checked whole
// (code), not as paths; a word only one reading of the arguments takes for
// the script is checked as both (sedScripts).
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

// sedScripts finds sed's scripts as GNU sed reads its arguments and as a sed
// that stops reading options at the first operand does (BSD sed; GNU sed
// with POSIXLY_CORRECT): the values of -e/--expression (long options may be
// abbreviated, as getopt_long allows: --expr, --e), or else the first
// operand. The readings differ when an -e follows an operand: GNU sed then
// takes every operand for a file (`sed -n p -e p` prints the file p), the
// other takes the first one for the script. scripts holds what either
// reading takes for a script, and the value of -l/--line-length too, which
// GNU sed skips, in case a sed reads -l without a value; at holds the
// indexes of the words both readings take for a script, which are not
// checked as paths. Every other word is. fromFile reports a -f/--file in
// either reading.
func sedScripts(args []string) (scripts []string, at map[int]bool, fromFile bool) {
	gnu, lineLength, gnuFile := readSed(args, true)
	other, _, otherFile := readSed(args, false)
	if gnuFile || otherFile {
		return nil, nil, true
	}
	at = map[int]bool{}
	for i, a := range args {
		g, byGNU := gnu[i]
		o, byOther := other[i]
		if byGNU {
			scripts = append(scripts, g)
		}
		if byOther && (!byGNU || o != g) {
			scripts = append(scripts, o)
		}
		if lineLength[i] {
			scripts = append(scripts, a)
		}
		at[i] = byGNU && byOther
	}
	return scripts, at, false
}

// readSed returns the scripts one reading of sed's arguments finds, by the
// index of the word that holds each (--expression=s holds s): permute reads
// options after operands too, and -l's value from the next word, as GNU sed
// does. lineLength holds the indexes of -l values skipped that way.
func readSed(args []string, permute bool) (scripts map[int]string, lineLength map[int]bool, fromFile bool) {
	scripts, lineLength = map[int]string{}, map[int]bool{}
	explicit := false
	first := -1
	value := func(i int) int { // the index of the word after args[i], or -1
		if i+1 < len(args) {
			return i + 1
		}
		return -1
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-"):
			if a == "--" {
				i++
			}
			if first < 0 && i < len(args) {
				first = i
			}
			if a == "--" || !permute {
				i = len(args)
			}
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			switch {
			case strings.HasPrefix("expression", name):
				explicit = true
				if hasVal {
					scripts[i] = val
				} else if v := value(i); v >= 0 {
					scripts[v], i = args[v], v
				}
			case strings.HasPrefix("file", name):
				return nil, nil, true
			case strings.HasPrefix("line-length", name) && !hasVal && permute:
				if v := value(i); v >= 0 {
					lineLength[v], i = true, v
				}
			}
		default:
		cluster:
			for j := 1; j < len(a); j++ {
				rest := a[j+1:]
				switch a[j] {
				case 'e':
					explicit = true
					if rest != "" {
						scripts[i] = rest
					} else if v := value(i); v >= 0 {
						scripts[v], i = args[v], v
					}
					break cluster
				case 'f':
					return nil, nil, true
				case 'l':
					if !permute {
						continue // BSD sed's -l takes no value
					}
					if v := value(i); rest == "" && v >= 0 {
						lineLength[v], i = true, v
					}
					break cluster
				case 'i':
					break cluster // the rest of the word is the backup suffix
				}
			}
		}
	}
	if !explicit && first >= 0 {
		scripts[first] = args[first]
	}
	return scripts, lineLength, false
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

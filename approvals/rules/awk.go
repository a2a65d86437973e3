package rules

import (
	"strings"
	"unicode"
)

// awkRules: a program that only reads its input runs unattended; one that
// runs commands, reads other files or the environment, or loads code goes to
// a human.
var awkRules = program{form: awkForm, code: awkProgram}

// awkProgram returns the index of the awk program (the first operand), which
// awkForm checks, unless an option before it takes a value: then everything
// is checked as a path too.
func awkProgram(args []string) map[int]bool {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return map[int]bool{i: true}
		}
		if a == "--field-separator" || a == "--assign" || takesNext(a, awkValueShort) {
			return nil
		}
	}
	return nil
}

// awkValueShort are awk's short options whose value may be the next word.
const awkValueShort = "FvfEileW"

// awkDanger are awk words that run commands, read other files or the
// environment.
var awkDanger = []string{"system", "getline", "ENVIRON", "ARGV", "ARGC", "PROCINFO", "close", "fflush", "@load", "@include"}

func awkForm(name string, args []string) string {
	for _, a := range args {
		// -f, -E, -i and -l, alone, in a cluster (-bf) or with the file
		// attached (-flib.awk); gawk's long options at any unambiguous
		// abbreviation (--f is also --field-separator, --l also --lint).
		if l, ok := shortIn(a, "fEilW", "eFvdDLop"); ok && l == 'W' {
			return name + " " + a + ": -W gives a long option another way (gawk -W file=, mawk -W exec)"
		} else if ok || abbrevOf(a, "file", 3) || abbrevOf(a, "exec", 1) || abbrevOf(a, "load", 2) || abbrevOf(a, "include", 1) {
			return name + " " + a + " runs a program file or extension"
		}
		for _, d := range awkDanger {
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

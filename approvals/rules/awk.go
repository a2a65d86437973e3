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
		if a == "-F" || a == "-v" || a == "--field-separator" || a == "--assign" {
			return nil
		}
	}
	return nil
}

// awkDanger are awk words that run commands, read other files or the
// environment.
var awkDanger = []string{"system", "getline", "ENVIRON", "ARGV", "ARGC", "PROCINFO", "close", "fflush", "@load", "@include"}

func awkForm(name string, args []string) string {
	for _, a := range args {
		if a == "-f" || a == "-E" || a == "-l" || a == "-i" ||
			abbrevOf(a, "file", 3) || abbrevOf(a, "exec", 1) || abbrevOf(a, "load", 2) || abbrevOf(a, "include", 2) {
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

package rules

import (
	"strings"
)

// nodeRules cover node and the runtimes that take its options (deno, bun):
// inline code, preloaded modules and debuggers go to a human.
var nodeRules = program{form: nodeForm}

func nodeForm(name string, args []string) string {
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

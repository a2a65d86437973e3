package rules

import (
	"slices"
	"strings"
)

// npmRules: the project's own scripts and read-only subcommands run
// unattended; installing, publishing and running registry packages go to a
// human.
var npmRules = program{form: func(_ string, args []string) string { return npmForm(args) }}

// npmSafe are npm subcommands that run the project's own scripts or only read.
var npmSafe = []string{"run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart",
	"ls", "list", "la", "ll", "why", "explain", "help", "prefix", "root"}

// npmRunner are npm options (nopt also takes any unambiguous abbreviation)
// that choose the program npm runs, or a config file that can.
var npmRunner = []string{"script-shell", "shell", "browser", "viewer", "editor", "node-options", "userconfig", "globalconfig"}

func npmForm(args []string) string {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || len(name) < 2 {
			continue
		}
		for _, r := range npmRunner {
			if strings.HasPrefix(r, name) {
				return "npm --" + r + " chooses the program npm runs or its config"
			}
		}
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		// --prefix, --tag, -w and the like take the next word as their
		// value: the subcommand may be any of the words after them.
		return "npm " + args[0] + " before the subcommand hides which subcommand runs"
	}
	sub := firstOperand(args)
	if sub == "" || slices.Contains(npmSafe, sub) {
		return ""
	}
	return "npm " + sub + " can install, publish or run packages from the registry"
}

package rules

import (
	"strings"
)

// goRules: building and testing run unattended; downloading code, changing
// the Go configuration and running a tool of the job's choosing go to a
// human.
var goRules = program{form: func(_ string, args []string) string { return goForm(args) }}

func goForm(args []string) string {
	// -C DIR, go's one flag before the subcommand, takes a value.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch flag, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(args[0], "-"), "-"), "="); {
		case flag == "C" && hasValue:
			args = args[1:]
		case flag == "C" && len(args) > 1:
			args = args[2:]
		default:
			return "go " + args[0] + " before the subcommand is a flag the rules do not know"
		}
	}
	if len(args) == 0 {
		return ""
	}
	sub := args[0]
	if sub == "get" || sub == "install" {
		return "go " + sub + " downloads and installs code"
	}
	for _, a := range args[1:] {
		flag, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
		case flag == "exec" || flag == "toolexec" || flag == "vettool":
			return "go " + a + " runs an arbitrary program"
		case sub == "env" && (flag == "w" || flag == "u"):
			return "go env -" + flag + " changes the user's Go configuration"
		}
	}
	return ""
}

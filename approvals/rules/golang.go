package rules

import (
	"strings"
)

// goRules: building and testing run unattended; downloading code, changing
// the Go configuration and running a tool of the job's choosing go to a
// human.
var goRules = program{form: func(_ string, args []string) string { return goForm(args) }}

func goForm(args []string) string {
	sub := firstOperand(args)
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

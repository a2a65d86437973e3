package rules

import (
	"slices"
	"strings"
)

// cargoRules: building, checking and testing the project run unattended;
// installing, publishing, fetching crates and any subcommand the rules do
// not know (an external cargo-NAME, an alias from the workspace's
// .cargo/config.toml) go to a human.
var cargoRules = program{form: func(_ string, args []string) string { return cargoForm(args) }}

// cargoSafe are cargo's subcommands (and built-in aliases) that work on the
// project in place.
var cargoSafe = []string{"build", "b", "check", "c", "test", "t", "run", "r", "doc", "d", "bench", "clean",
	"fmt", "clippy", "tree", "metadata", "locate-project", "verify-project", "pkgid", "version", "help"}

func cargoForm(args []string) string {
	for _, a := range args {
		if a == "--config" || strings.HasPrefix(a, "--config=") || a == "-Z" {
			return "cargo " + a + " changes what cargo runs"
		}
	}
	if len(args) == 0 {
		return ""
	}
	switch sub := args[0]; {
	case strings.HasPrefix(sub, "-"):
		// --color, -C, --explain and the like take the next word as their
		// value: the subcommand may be any of the words after them.
		return "cargo " + sub + " before the subcommand hides which subcommand runs"
	case strings.HasPrefix(sub, "+"):
		return "cargo " + sub + " picks a toolchain the rules do not check"
	case !slices.Contains(cargoSafe, sub):
		return "cargo " + sub + " is not a known local cargo command (install, publish, fetch and the like go to a human)"
	}
	return ""
}

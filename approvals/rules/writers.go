package rules

import (
	"path/filepath"
	"slices"
	"strings"
)

// writers find what a program writes, by the name it is run by, whether or
// not it is on the allow list: a command that goes to a human still runs with
// approval off, and Claude Code's sandbox leaves .githooks, .husky, .npmrc
// and a .git that does not exist yet writable. Option values are not skipped
// but read as operands too, which only ever adds paths to check; every
// operand but the first of cp and the like is taken for a destination, and
// every operand of tee and the like.
var writers = map[string]func(args []string) writeTargets{
	"cp": copyWrites("St"), "mv": copyWrites("St"), "ln": linkWrites, "install": installWrites,
	"rsync": rsyncWrites, "tee": operandWrites, "touch": operandWrites, "truncate": operandWrites,
	"mkdir": operandWrites, "dd": ddWrites, "sed": sedWrites, "gsed": sedWrites, "sort": sortWrites,
	"uniq": uniqWrites, "find": findWrites, "go": goWrites, "rustc": rustcWrites, "cargo": cargoWrites,
	"tsc": tscWrites, "git": gitWrites,
}

// operands returns the words that are not options: every word that does not
// start with - (a lone - included), and every word after --.
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// below returns p as a program sees it after changing to the directory
// dir (git -C, go -C): relative to dir, unless p is absolute.
func below(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func butFirst(s []string) []string {
	if len(s) < 2 {
		return nil
	}
	return s[1:]
}

// optionValues returns the values of one option in every spelling getopt_long
// accepts: the short letter (when not 0) alone, in a cluster or with the value
// attached, unless an earlier letter of takesValue takes the rest of the
// word; the long name or an abbreviation of at least min letters (none when
// long is ""), with =value or the next word.
func optionValues(args []string, short byte, takesValue, long string, min int) []string {
	var out []string
	next := func(i int) {
		if i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	for i, a := range args {
		switch {
		case a == "--":
			return out
		case long != "" && abbrevOf(a, long, min):
			if _, v, ok := strings.Cut(a, "="); ok {
				out = append(out, v)
			} else {
				next(i)
			}
		case short != 0 && len(a) > 1 && a[0] == '-' && a[1] != '-':
			for j := 1; j < len(a); j++ {
				if a[j] == short {
					if j+1 < len(a) {
						out = append(out, a[j+1:])
					} else {
						next(i)
					}
					break
				}
				if strings.IndexByte(takesValue, a[j]) >= 0 {
					break
				}
			}
		}
	}
	return out
}

// copyWrites is cp's and mv's rule: every operand but the first may be the
// destination, or a directory the others go into; so is the value of
// -t/--target-directory. takesValue are the program's short options that take
// a value.
func copyWrites(takesValue string) func([]string) writeTargets {
	return func(args []string) writeTargets {
		ops := operands(args)
		return writeTargets{
			paths:    append(butFirst(ops), optionValues(args, 't', strings.ReplaceAll(takesValue, "t", ""), "target-directory", 3)...),
			into:     ops,
			parents:  slices.ContainsFunc(args, func(a string) bool { return abbrevOf(a, "parents", 3) }),
			suffixes: optionValues(args, 'S', strings.ReplaceAll(takesValue, "S", ""), "suffix", 3),
		}
	}
}

// linkWrites: ln TARGET alone makes a link named after it here.
func linkWrites(args []string) writeTargets {
	t := copyWrites("St")(args)
	if ops := operands(args); len(ops) == 1 {
		t.paths = append(t.paths, filepath.Base(ops[0]))
	}
	return t
}

// installWrites: install -d creates every operand.
func installWrites(args []string) writeTargets {
	t := copyWrites("gmoSt")(args)
	for _, a := range args {
		if hasShort(a, 'd', "gmoSt") || abbrevOf(a, "directory", 3) {
			t.paths = operands(args)
		}
	}
	return t
}

// rsyncWrites: the last operand is the destination, or a directory the
// others go into (with their directories under -R/--relative); backups, partial
// transfers, temporary files, logs and batches go where their options say.
func rsyncWrites(args []string) writeTargets {
	ops := operands(args)
	t := writeTargets{paths: butFirst(ops), into: ops}
	for _, a := range args {
		t.parents = t.parents || hasShort(a, 'R', "BefMT") || abbrevOf(a, "relative", 3)
	}
	for _, long := range []string{"backup-dir", "partial-dir", "log-file", "write-batch", "only-write-batch"} {
		t.paths = append(t.paths, optionValues(args, 0, "", long, len(long))...)
	}
	t.paths = append(t.paths, optionValues(args, 'T', "BefM", "temp-dir", 3)...)
	t.suffixes = optionValues(args, 0, "", "suffix", 3)
	return t
}

func operandWrites(args []string) writeTargets { return writeTargets{paths: operands(args)} }

// sortWrites: -o names sort's output.
func sortWrites(args []string) writeTargets {
	return writeTargets{paths: optionValues(args, 'o', "kSTt", "output", 1)}
}

// uniqWrites: uniq's second operand is its output.
func uniqWrites(args []string) writeTargets { return writeTargets{paths: butFirst(operands(args))} }

func ddWrites(args []string) writeTargets {
	var t writeTargets
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "of="); ok {
			t.paths = append(t.paths, v)
		}
	}
	return t
}

// sedWrites: sed -i rewrites every file operand (every word both readings
// of the arguments do not take for the script, sedScripts), and keeps a
// backup with -i's suffix appended, or in place of each * the file's name (a
// suffix with a / puts it in another directory).
func sedWrites(args []string) writeTargets {
	inPlace := false
	var suffixes []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if l, ok := shortIn(a, "i", "efl"); ok && l == 'i' {
			inPlace = true
			suffixes = append(suffixes, a[strings.IndexByte(a, 'i')+1:])
		} else if abbrevOf(a, "in-place", 1) {
			inPlace = true
			_, s, _ := strings.Cut(a, "=")
			suffixes = append(suffixes, s)
		}
	}
	if !inPlace {
		return writeTargets{}
	}
	_, script, _ := sedScripts(args)
	var t writeTargets
	for i, a := range args {
		if !script[i] && (a == "-" || !strings.HasPrefix(a, "-")) {
			t.paths = append(t.paths, a)
		}
	}
	for _, f := range slices.Clone(t.paths) {
		for _, s := range suffixes {
			switch {
			case s == "":
			case strings.Contains(s, "*"):
				b := strings.ReplaceAll(s, "*", filepath.Base(f))
				t.paths = append(t.paths, b, filepath.Join(filepath.Dir(f), b))
			default:
				t.paths = append(t.paths, f+s)
			}
		}
	}
	return t
}

// findWrites: -fprint and the like write the file they name; what -exec runs
// is read as a command of its own (invoked).
func findWrites(args []string) writeTargets {
	var t writeTargets
	for i, a := range args {
		if (a == "-fprint" || a == "-fprint0" || a == "-fprintf" || a == "-fls") && i+1 < len(args) {
			t.paths = append(t.paths, args[i+1])
		}
	}
	return t
}

// goWrites: -o names the file or directory a build, test or vendor writes,
// below the directory -C names.
func goWrites(args []string) writeTargets {
	dir := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		flag, v, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch {
		case flag == "C" && hasValue:
			dir, args = below(dir, v), args[1:]
		case flag == "C" && len(args) > 1:
			dir, args = below(dir, args[1]), args[2:]
		default:
			args = args[1:]
		}
	}
	var t writeTargets
	for i, a := range args {
		flag, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-") || flag != "o":
		case hasValue:
			t.paths = append(t.paths, below(dir, v))
		case i+1 < len(args):
			t.paths = append(t.paths, below(dir, args[i+1]))
		}
	}
	return t
}

// rustcWrites: -o names the output, --out-dir its directory, --emit
// KIND=PATH each output of a kind.
func rustcWrites(args []string) writeTargets {
	t := writeTargets{paths: optionValues(args, 'o', "", "out-dir", len("out-dir"))}
	for _, e := range optionValues(args, 0, "", "emit", len("emit")) {
		for _, kind := range strings.Split(e, ",") {
			if _, path, ok := strings.Cut(kind, "="); ok {
				t.paths = append(t.paths, path)
			}
		}
	}
	return t
}

func cargoWrites(args []string) writeTargets {
	var t writeTargets
	for _, long := range []string{"target-dir", "artifact-dir", "out-dir"} {
		t.paths = append(t.paths, optionValues(args, 0, "", long, len(long))...)
	}
	return t
}

// tscWrites: tsc reads its options in any case, after - or --.
func tscWrites(args []string) writeTargets {
	var t writeTargets
	for i, a := range args {
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !slices.Contains([]string{"outfile", "outdir", "out", "declarationdir", "tsbuildinfofile"}, strings.ToLower(name)) {
			continue
		}
		if hasValue {
			t.paths = append(t.paths, v)
		} else if i+1 < len(args) {
			t.paths = append(t.paths, args[i+1])
		}
	}
	return t
}

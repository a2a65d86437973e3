package rules

import "strings"

// shortIn returns the first letter of want in the short-option cluster a
// (-abc; not --long, not a lone -), read as getopt and git's parse-options
// read it: a letter in takesValue takes the rest of the word as its value,
// so the letters after it are not options. ok is false when there is none.
func shortIn(a, want, takesValue string) (letter byte, ok bool) {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return 0, false
	}
	for i := 1; i < len(a); i++ {
		if strings.IndexByte(want, a[i]) >= 0 {
			return a[i], true
		}
		if strings.IndexByte(takesValue, a[i]) >= 0 {
			return 0, false
		}
	}
	return 0, false
}

// takesNext reports whether the short-option cluster a ends in its first
// letter from takesValue, which then takes the next word as its value (-F
// alone, or -bv).
func takesNext(a, takesValue string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	return strings.IndexAny(a[1:], takesValue) == len(a)-2
}

// hasShort reports whether the cluster a holds the option letter short
// (shortIn).
func hasShort(a string, short byte, takesValue string) bool {
	_, ok := shortIn(a, string(short), takesValue)
	return ok
}

// longIn reports whether a is --long or an abbreviation of it of at least
// min letters, with or without =value (abbrevOf).
func longIn(a string, min int, long ...string) bool {
	for _, l := range long {
		if abbrevOf(a, l, min) {
			return true
		}
	}
	return false
}

// readsFileList names an option that makes the program read the names of
// the files to open from a list file, whose names the rules never see
// (--files0-from of sort, wc and du at any abbreviation, file -f), or "".
func readsFileList(name string, args []string) string {
	for _, a := range args {
		switch {
		case strings.Contains(a, "files0-from"),
			(name == "sort" || name == "wc" || name == "du") && longIn(a, 1, "files0-from"),
			name == "file" && longIn(a, 1, "files-from"):
		case name == "file":
			if _, ok := shortIn(a, "f", "eFmP"); !ok {
				continue
			}
		default:
			continue
		}
		return name + " " + a + " reads a list of file names the rules cannot check"
	}
	return ""
}

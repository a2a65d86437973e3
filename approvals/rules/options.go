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

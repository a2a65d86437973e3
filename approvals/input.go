package approvals

import (
	"fmt"
	"unicode/utf8"
)

// maxShownString bounds each string of a tool input kept in a request file
// (a Write's content can be megabytes); the harness still gets the full
// input back when the request is approved.
const maxShownString = 4096

// A whole input kept in one record is bounded too: at most maxShownValues
// values (strings, numbers, keys' values, elements) and maxShownBytes of
// their strings, so an input of many small values cannot make one record
// megabytes long.
const (
	maxShownValues = 1000
	maxShownBytes  = 64 << 10
)

// OmittedInputKey is the one key of a record's input that was not kept
// (its job's audit budget for inputs was spent).
const OmittedInputKey = "_not_kept"

// DisplayInput copies input for the request file and the audit log,
// clipping long strings and what is past the whole input's bounds, and
// marking that it did so with "_clipped": true.
func DisplayInput(input map[string]any) map[string]any {
	clipped := false
	values, size := 0, 0
	full := func() bool {
		if values >= maxShownValues || size >= maxShownBytes {
			clipped = true
			return true
		}
		values++
		return false
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			size += min(len(t), maxShownString)
			if len(t) > maxShownString {
				clipped = true
				cut := maxShownString
				for cut > 0 && !utf8.RuneStart(t[cut]) {
					cut--
				}
				return t[:cut] + fmt.Sprintf("… [%d more bytes]", len(t)-cut)
			}
			return t
		case map[string]any:
			m := make(map[string]any, min(len(t), maxShownValues))
			for k, x := range t {
				if full() {
					break
				}
				if len(k) > maxShownString {
					k, clipped = ClipText(k, maxShownString), true
				}
				size += len(k)
				m[k] = walk(x)
			}
			return m
		case []any:
			l := make([]any, 0, min(len(t), maxShownValues))
			for _, x := range t {
				if full() {
					break
				}
				l = append(l, walk(x))
			}
			return l
		}
		return v
	}
	out, _ := walk(input).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if clipped {
		out["_clipped"] = true
	}
	return out
}

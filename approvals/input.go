package approvals

import (
	"fmt"
	"unicode/utf8"
)

// maxShownString bounds each string of a tool input kept in a request file
// (a Write's content can be megabytes); the harness still gets the full
// input back when the request is approved.
const maxShownString = 4096

// DisplayInput copies input for the request file, clipping long strings and
// marking that it did so with "_clipped": true.
func DisplayInput(input map[string]any) map[string]any {
	clipped := false
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
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
			m := make(map[string]any, len(t))
			for k, x := range t {
				m[k] = walk(x)
			}
			return m
		case []any:
			l := make([]any, len(t))
			for i, x := range t {
				l[i] = walk(x)
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

package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxSummary bounds the one-line summary shown to a human (the full input is
// in the request file).
const maxSummary = 400

// Summarize renders a tool call in one line, without classifying it.
func Summarize(req Request) string {
	b, err := json.Marshal(req.Input)
	if err != nil {
		b = []byte("{…}")
	}
	return Clip(req.Tool + " " + string(b))
}

// Clip makes s one line of at most about maxSummary bytes for a human,
// keeping both ends.
func Clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxSummary {
		return s
	}
	// What a long command ends with (`echo <400 a's> ; rm -rf ~/x`) matters
	// as much as how it starts.
	head, tail := maxSummary*2/3, maxSummary/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return fmt.Sprintf("%s … [%d bytes cut] … %s", s[:head], from-head, s[from:])
}

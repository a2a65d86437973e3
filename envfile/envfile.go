// Package envfile edits one variable of a .env file in place and keeps every
// other line — comments, blank lines, unknown variables, `export` prefixes,
// trailing comments and the file's line endings — exactly as it was.
package envfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Set writes KEY=value into the file at path, creating it (mode 0600) if it
// does not exist. Every existing assignment of key is rewritten in place; if
// there is none, the first commented-out one (`# KEY=…`, as in .env.example)
// becomes the assignment; only without either is it appended. A symlinked file is edited at its
// target, so the link survives.
func Set(path, key, value string) error {
	if !validKey(key) {
		return fmt.Errorf("envfile: %q is not a variable name", key)
	}
	target, err := resolve(path)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := statedir.WriteFileAtomic(target, Update(old, key, value)); err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	return nil
}

// resolve follows symlinks of an existing path; a missing file is created where named.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("env file %s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		return real, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if _, lerr := os.Lstat(abs); lerr == nil {
			return "", fmt.Errorf("env file %s is a dangling symlink: fix or remove it", path)
		}
		return abs, nil
	}
	return "", fmt.Errorf("env file %s: %w", path, err)
}

var keyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validKey(k string) bool { return keyRE.MatchString(k) }

// Update returns data with key set to value (see Set). It is pure, for tests
// and for callers that write the bytes themselves.
func Update(data []byte, key, value string) []byte {
	eol := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		eol = "\r\n"
	}
	text := string(data)
	trailingEOL := text == "" || strings.HasSuffix(text, "\n")
	parts := strings.Split(text, "\n")
	if trailingEOL {
		parts = parts[:len(parts)-1] // the empty piece after the last newline
	}
	found := false
	example := -1     // the first commented-out assignment of key ("# KEY=…")
	var open byte     // the quote of a multi-line value still open ('"', '\'' or 0)
	dropping := false // the open value is key's old one: its lines go
	drop := map[int]bool{}
	for i, raw := range parts {
		line := strings.TrimSuffix(raw, "\r")
		if open != 0 {
			// A continuation line of a quoted value: part of that value, not an assignment.
			drop[i] = dropping
			if closesQuote(line, open) {
				open, dropping = 0, false
			}
			continue
		}
		q := opensQuote(line)
		if newLine, ok := rewriteLine(line, key, value); ok {
			parts[i] = newLine
			if strings.HasSuffix(raw, "\r") {
				parts[i] += "\r"
			}
			found = true
			open, dropping = q, q != 0
			continue
		}
		if example < 0 && q == 0 {
			if _, ok := rewriteLine(uncomment(line), key, value); ok {
				example = i
			}
		}
		open = q
	}
	if !found && example >= 0 {
		// Edit the commented example (.env.example's `# KEY=`) in place
		// rather than append a second line that leaves it to mislead.
		raw := parts[example]
		parts[example], _ = rewriteLine(uncomment(strings.TrimSuffix(raw, "\r")), key, value)
		if strings.HasSuffix(raw, "\r") {
			parts[example] += "\r"
		}
		found = true
	}
	var b strings.Builder
	for i, p := range parts {
		if drop[i] {
			continue
		}
		b.WriteString(p)
		if i < len(parts)-1 || trailingEOL {
			b.WriteString("\n")
		}
	}
	if !found {
		if b.Len() > 0 && !trailingEOL {
			b.WriteString(eol)
		}
		b.WriteString(key + "=" + Quote(value) + eol)
	}
	return []byte(b.String())
}

// uncomment returns the assignment a comment line holds when it is nothing
// but `#` and an assignment ("# KEY=value"), or "".
func uncomment(line string) string {
	t, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), "#")
	if !ok {
		return ""
	}
	t = strings.TrimLeft(t, " \t")
	name, _, ok := strings.Cut(t, "=")
	if !ok || !validKey(strings.TrimPrefix(name, "export ")) {
		return ""
	}
	return t
}

// opensQuote returns the quote character of an assignment whose quoted value
// does not close on this line (godotenv reads such a value on to the line that
// closes it), or 0.
func opensQuote(line string) byte {
	t := strings.TrimLeft(line, " \t")
	if strings.HasPrefix(t, "#") {
		return 0
	}
	_, rest, ok := strings.Cut(t, "=")
	if !ok {
		return 0
	}
	v := strings.TrimLeft(rest, " \t")
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return 0
	}
	if closesQuote(v[1:], v[0]) {
		return 0
	}
	return v[0]
}

// closesQuote reports whether s holds an unescaped q (backslash escapes count
// inside double quotes only).
func closesQuote(s string, q byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && q == '"' {
			i++
			continue
		}
		if s[i] == q {
			return true
		}
	}
	return false
}

// rewriteLine replaces the value in line if it assigns key, keeping leading
// whitespace, an `export ` prefix and a trailing comment.
func rewriteLine(line, key, value string) (string, bool) {
	trimmed := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(trimmed)]
	prefix := ""
	if rest, ok := strings.CutPrefix(trimmed, "export "); ok {
		prefix = "export "
		trimmed = strings.TrimLeft(rest, " \t")
	}
	name, rest, ok := strings.Cut(trimmed, "=")
	if !ok || strings.TrimRight(name, " \t") != key {
		return "", false
	}
	sep := name[len(strings.TrimRight(name, " \t")):] + "="
	ws := rest[:len(rest)-len(strings.TrimLeft(rest, " \t"))]
	return indent + prefix + key + sep + ws + Quote(value) + trailingComment(strings.TrimLeft(rest, " \t")), true
}

// trailingComment returns the ` # …` part after an assignment's value, if any.
func trailingComment(v string) string {
	if v == "" {
		return ""
	}
	if q := v[0]; q == '"' || q == '\'' {
		for i := 1; i < len(v); i++ {
			if v[i] == '\\' && q == '"' {
				i++
				continue
			}
			if v[i] == q {
				after := v[i+1:]
				if strings.HasPrefix(strings.TrimLeft(after, " \t"), "#") {
					return after
				}
				return ""
			}
		}
		return ""
	}
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			j := i
			for j > 0 && (v[j-1] == ' ' || v[j-1] == '\t') {
				j--
			}
			return v[j:]
		}
	}
	return ""
}

// Quote returns value as a .env value: bare when it is plain, else double-quoted
// with backslash escapes (the form godotenv reads back unchanged).
func Quote(value string) string {
	plain := value != "" && !strings.ContainsAny(value, " \t\"'`#$\\\n\r=")
	if plain || value == "" {
		return value
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "$", `\$`)
	return `"` + r.Replace(value) + `"`
}

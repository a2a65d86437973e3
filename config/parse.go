package config

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// parser reads typed values of the variables, keeping the first error.
type parser struct {
	get func(string) string
	err error
}

func (p *parser) fail(name, val, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s=%q: want %s (see .env.example)", name, val, want)
	}
}

func (p *parser) str(name, def string) string {
	if v := p.get(name); v != "" {
		return v
	}
	return def
}

// intv parses an int within [lo, hi]; every bound used fits 32 bits.
func (p *parser) intv(name string, def, lo, hi int) int {
	return int(p.int64v(name, int64(def), int64(lo), int64(hi)))
}

// int64v parses an int64 within [lo, hi] (64-bit on every GOARCH).
func (p *parser) int64v(name string, def, lo, hi int64) int64 {
	v := p.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		p.fail(name, v, fmt.Sprintf("an integer from %d to %d", lo, hi))
		return def
	}
	return n
}

// maxMS bounds every *_MS value: about 35 years, far inside time.Duration.
const maxMS = 1 << 40

func (p *parser) ms(name string, def time.Duration) time.Duration {
	return time.Duration(p.int64v(name, def.Milliseconds(), 1, maxMS)) * time.Millisecond
}

// msText is d as a *_MS value.
func msText(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func (p *parser) float(name string, def float64) float64 {
	v := p.get(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		p.fail(name, v, "a number ≥ 0")
		return def
	}
	return f
}

// oneOf is the variable's value, lower-cased, when it is one of allowed
// (def when unset).
func (p *parser) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(p.get(name))
	if v == "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.fail(name, v, strings.Join(allowed, ", ")+" or unset")
	return def
}

func (p *parser) onOff(name string) bool {
	switch v := strings.ToLower(p.get(name)); v {
	case "", "on", "1", "true", "yes":
		return true
	case "off", "0", "false", "no":
		return false
	default:
		p.fail(name, v, "on or off")
		return true
	}
}

func splitList(s, sep string) []string {
	var out []string
	for _, part := range strings.Split(s, sep) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// offOn reads a switch that is off unless set on.
func (p *parser) offOn(name string) bool {
	switch v := strings.ToLower(p.get(name)); v {
	case "on", "1", "true", "yes":
		return true
	case "", "off", "0", "false", "no":
		return false
	default:
		p.fail(name, v, "on or off")
		return false
	}
}

// NormalizeOrigin is an origin as browsers send it, lower case:
// scheme://host[:port] with scheme http or https, nothing after.
func NormalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin: write scheme://host[:port], e.g. https://chatgpt.com", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// splitRoots splits a list of roots at the OS path-list separator and at
// ";", which the TypeScript bridge used on every OS.
func splitRoots(s string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == os.PathListSeparator }) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

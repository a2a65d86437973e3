// Package logging builds the bridge's zerolog logger: JSON lines to a file (or
// to a non-terminal stderr), readable console output on a terminal, and every
// line scrubbed of the configured secrets before it is written.
package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Redacted replaces every secret in a log line.
const Redacted = "<redacted>"

// minSecretLen keeps a tiny or empty "secret" from shredding every line.
const minSecretLen = 4

// Options say where the log goes.
type Options struct {
	// File, when set, receives JSON lines (created 0600, appended; its
	// directory is created 0700 if missing).
	File string
	// Level is debug, info, warn or error ("" = info).
	Level string
	// Stderr is used when File is empty; a terminal gets console output,
	// anything else JSON lines. Nil means os.Stderr.
	Stderr io.Writer
	// Console forces (true) or forbids (false) console output on Stderr; nil
	// means "when Stderr is a terminal".
	Console *bool
	// Secrets are removed from every line (the path secret, the API key).
	Secrets []string
}

// New returns the logger and a closer for the log file (a no-op without one).
func New(o Options) (zerolog.Logger, io.Closer, error) {
	level, err := ParseLevel(o.Level)
	if err != nil {
		return zerolog.Nop(), nopCloser{}, err
	}
	var out io.Writer
	var closer io.Closer = nopCloser{}
	switch {
	case o.File != "":
		// The log usually lives in the state dir, which may not exist yet.
		if err := os.MkdirAll(filepath.Dir(o.File), 0o700); err != nil {
			return zerolog.Nop(), nopCloser{}, fmt.Errorf("create log directory: %w", err)
		}
		f, err := os.OpenFile(o.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return zerolog.Nop(), nopCloser{}, fmt.Errorf("open log file: %w", err)
		}
		out, closer = NewRedactor(f, o.Secrets), f
	default:
		w := o.Stderr
		if w == nil {
			w = os.Stderr
		}
		console := isTerminal(w)
		if o.Console != nil {
			console = *o.Console
		}
		if console {
			// Redact after formatting: the console writer re-renders fields.
			out = zerolog.ConsoleWriter{Out: NewRedactor(w, o.Secrets), TimeFormat: time.TimeOnly}
		} else {
			out = NewRedactor(w, o.Secrets)
		}
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger(), closer, nil
}

// ParseLevel maps BRIDGE_LOG_LEVEL to a zerolog level.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return zerolog.InfoLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "trace":
		return zerolog.TraceLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	default:
		return zerolog.InfoLevel, fmt.Errorf("BRIDGE_LOG_LEVEL=%q: want debug, info, warn or error", s)
	}
}

// Redactor is an io.Writer that replaces secrets (as written and as they look
// JSON-escaped) before passing each write on. zerolog writes one line per
// Write, so a secret is never split across calls.
type Redactor struct {
	mu      sync.Mutex
	w       io.Writer
	needles [][]byte
}

// NewRedactor wraps w; secrets shorter than 4 bytes are ignored.
func NewRedactor(w io.Writer, secrets []string) *Redactor {
	r := &Redactor{w: w}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			r.needles = append(r.needles, []byte(s))
		}
	}
	for _, s := range secrets {
		add(s)
		if b, err := json.Marshal(s); err == nil {
			add(string(b[1 : len(b)-1])) // the secret as it appears inside a JSON string
		}
	}
	return r
}

// Redact is s with every secret replaced, as a Redactor writes it.
func Redact(s string, secrets []string) string {
	var b bytes.Buffer
	NewRedactor(&b, secrets).Write([]byte(s))
	return b.String()
}

// Write writes p with every secret replaced; it reports len(p) on success so
// callers never see a short write because of the replacement.
func (r *Redactor) Write(p []byte) (int, error) {
	out := p
	for _, n := range r.needles {
		if bytes.Contains(out, n) {
			out = bytes.ReplaceAll(out, n, []byte(Redacted))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

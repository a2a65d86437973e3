package cli

import (
	"bytes"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// masker replaces secrets with a short, recognisable stub.
type masker struct {
	mu      sync.Mutex
	secrets []string
	show    bool
}

func (m *masker) add(secrets ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range secrets {
		if len(s) < 4 {
			continue // too short to mask without mangling ordinary text
		}
		found := false
		for _, have := range m.secrets {
			found = found || have == s
		}
		if !found {
			m.secrets = append(m.secrets, s)
		}
	}
	// Longest first, so a secret that contains another is masked whole.
	sort.Slice(m.secrets, func(i, j int) bool { return len(m.secrets[i]) > len(m.secrets[j]) })
}

func (m *masker) setShow(v bool) {
	m.mu.Lock()
	m.show = v
	m.mu.Unlock()
}

func (m *masker) shown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.show
}

// apply returns s with every registered secret replaced by its first four characters and "…".
func (m *masker) apply(s string, showable bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if showable && m.show {
		return s
	}
	for _, sec := range m.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, maskValue(sec))
		}
	}
	// Secrets bridgectl no longer knows (an old, rotated secret in a log; a
	// key in another file) are caught by their shape.
	for _, p := range secretShapes {
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			sub := p.re.FindStringSubmatchIndex(m)
			return m[:sub[2]] + maskValue(m[sub[2]:sub[3]]) + m[sub[3]:]
		})
	}
	return s
}

// secretShapes find secrets by context; group 1 is the secret. Values already
// masked (ending in "…") do not match.
var secretShapes = []struct{ re *regexp.Regexp }{
	{regexp.MustCompile(`/mcp/([^/\s"'?#<>…]{8,})(?:[/\s"'?#<>]|$)`)},
	{regexp.MustCompile(`(?:MCP_PATH_SECRET|DEEPSEEK_API_KEY|TUNNEL_TOKEN)=["']?([^\s"'…]{4,})(?:[\s"']|$)`)},
	{regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{16,})(?:[^A-Za-z0-9_…-]|$)`)},
	// Credentials in a URL (https://user:password@host/): the userinfo goes,
	// scheme, host and path stay. Go's own errors already turn the password
	// into "***"; the user name goes with it.
	{regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://([^/\s"'?#<>@…]+)@`)},
}

// maskValue is how a secret looks in output: enough to tell two apart, not to use one.
func maskValue(s string) string {
	if len(s) < 16 {
		return "…"
	}
	return s[:4] + "…"
}

// maskWriter masks whole lines; a partial line waits in the buffer until its
// newline or Flush, so a secret split across writes is still caught.
type maskWriter struct {
	mu       sync.Mutex
	m        *masker
	w        io.Writer
	buf      []byte
	showable bool // --show lifts masking (stdout only; stderr stays masked)
}

func (w *maskWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		out := w.m.apply(string(w.buf[:i+1]), w.showable)
		rest := append([]byte(nil), w.buf[i+1:]...)
		w.buf = rest
		if _, err := io.WriteString(w.w, out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes a pending partial line.
func (w *maskWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		io.WriteString(w.w, w.m.apply(string(w.buf), w.showable))
		w.buf = nil
	}
}

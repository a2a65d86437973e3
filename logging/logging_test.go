package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	fakeSecret = "test-secret-0123456789abcdef"
	fakeKey    = "sk-test-double-key"
)

func TestRedactsSecretsInEveryFormat(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		console *bool
	}{{"json", &no}, {"console", &yes}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, closer, err := New(Options{Stderr: &buf, Console: tc.console, Secrets: []string{fakeSecret, fakeKey, "", "ab"}})
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			log.Info().Str("path", "/mcp/"+fakeSecret).Str("auth", "Bearer "+fakeKey).Msg("request to /mcp/" + fakeSecret)
			log.Error().Err(os.ErrNotExist).Str("quoted", `"`+fakeSecret+`"`).Str("short", "keep-ab-text").Msg("x")
			out := buf.String()
			if strings.Contains(out, fakeSecret) || strings.Contains(out, fakeKey) {
				t.Fatalf("secret in log output:\n%s", out)
			}
			if strings.Count(out, Redacted) < 4 {
				t.Fatalf("want at least 4 redactions, got:\n%s", out)
			}
			if !strings.Contains(out, "keep-ab-text") { // short "secrets" are not redacted
				t.Fatalf("output lost text: %s", out)
			}
		})
	}
}

func TestFileGetsJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "bridge.log") // the directory does not exist yet
	log, closer, err := New(Options{File: path, Level: "debug", Secrets: []string{fakeSecret}})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Str("secret", fakeSecret).Msg("hello")
	log.Info().Msg("second")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, want 0600", st.Mode().Perm())
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", b)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["secret"] != Redacted || rec["message"] != "hello" || rec["level"] != "debug" {
		t.Errorf("record = %v", rec)
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		logs    bool // does an info line get through?
	}{
		{"", false, true}, {"info", false, true}, {"DEBUG", false, true}, {"warn", false, false}, {"error", false, false}, {"loud", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var buf bytes.Buffer
			no := false
			log, _, err := New(Options{Level: tt.in, Stderr: &buf, Console: &no})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "BRIDGE_LOG_LEVEL") {
					t.Errorf("error does not name the variable: %v", err)
				}
				return
			}
			log.Info().Msg("line")
			if got := buf.Len() > 0; got != tt.logs {
				t.Errorf("info logged = %v, want %v", got, tt.logs)
			}
		})
	}
}

// Redact replaces every secret in a string, as the log's writer does.
func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"the secret s3cr3t-value here", "the secret " + Redacted + " here"},
		{"nothing to hide", "nothing to hide"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if got := Redact(tt.in, []string{"s3cr3t-value"}); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

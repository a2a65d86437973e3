package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mapEnv(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadFrom(filepath.Join(dir, "absent.env"), mapEnv(map[string]string{"XDG_STATE_HOME": dir}))
	if err == nil {
		t.Fatalf("explicit missing env file: want error, got config %+v", c)
	}
	t.Chdir(dir) // no ./.env here
	c, err = LoadFrom("", mapEnv(map[string]string{"XDG_STATE_HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Addr", c.Addr(), "127.0.0.1:8787"},
		{"RateLimit", c.RateLimitPerMinute, 60},
		{"BaseURL", c.DeepSeekBaseURL, "https://api.deepseek.com"},
		{"AnthropicBaseURL", c.AnthropicBaseURL, "https://api.deepseek.com/anthropic"},
		{"Model", c.Model, "deepseek-flash"},
		{"FlashTimeout", c.FlashTimeout, 90 * time.Second},
		{"MaxOutputTokens", c.MaxOutputTokens, 4096},
		{"MaxSteps", c.MaxSteps, 120},
		{"JobTimeout", c.JobTimeout, 30 * time.Minute},
		{"ResultTTL", c.ResultTTL, 30 * time.Minute},
		{"ApprovalTimeout", c.ApprovalTimeout, 5 * time.Minute},
		{"SyncWindow", c.SyncWindow, 45 * time.Second},
		{"MaxConcurrent", c.MaxConcurrent, 2},
		{"CCApproval", c.CCApproval, true},
		{"Sandbox", c.Sandbox, true},
		{"JobMaxCostUSD", c.JobMaxCostUSD, 1.00},
		{"DailyMaxCostUSD", c.DailyMaxCostUSD, 0.0},
		{"StateDir", c.StateDir, filepath.Join(dir, "deepseek-mcp-bridge")},
		{"AllowedRoots", len(c.AllowedRoots), 0},
		{"ApproveAllow has git", strings.Contains(","+strings.Join(c.ApproveAllow, ",")+",", ",git,"), true},
		{"EnvFile", c.EnvFile, ""},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestEnvWinsOverFile(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "my.env")
	body := "# comment\nMCP_PATH_SECRET=from-file-0123456789\nPORT=9000\nDEEPSEEK_MODEL=deepseek-v4-pro\nBRIDGE_CC_APPROVAL=off\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFrom("", mapEnv(map[string]string{
		"BRIDGE_ENV_FILE":       envFile,
		"PORT":                  "9100",
		"BRIDGE_STATE_DIR":      filepath.Join(dir, "state"),
		"BRIDGE_JOB_TIMEOUT_MS": "3600000",
		"BRIDGE_RESULT_TTL_MS":  "1000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 9100 {
		t.Errorf("Port = %d, want env's 9100", c.Port)
	}
	if c.PathSecret != "from-file-0123456789" || c.Model != "deepseek-v4-pro" || c.CCApproval {
		t.Errorf("file values not applied: %+v", c)
	}
	if c.EnvFile != envFile {
		t.Errorf("EnvFile = %q, want %q", c.EnvFile, envFile)
	}
	if c.ResultTTL != time.Hour {
		t.Errorf("ResultTTL = %v, want raised to the job timeout (1h)", c.ResultTTL)
	}
}

func TestLoadRejectsBadValues(t *testing.T) {
	for _, tc := range []struct{ name, val, want string }{
		{"PORT", "eighty", "PORT"},
		{"PORT", "70000", "0 to 65535"},
		{"BRIDGE_SANDBOX", "maybe", "on or off"},
		{"BRIDGE_JOB_MAX_COST_USD", "-1", "≥ 0"},
		{"DEEPSEEK_TIMEOUT_MS", "0", "DEEPSEEK_TIMEOUT_MS"},
	} {
		t.Run(tc.name+"="+tc.val, func(t *testing.T) {
			t.Chdir(t.TempDir())
			_, err := LoadFrom("", mapEnv(map[string]string{tc.name: tc.val, "BRIDGE_STATE_DIR": t.TempDir()}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestCheckSecret(t *testing.T) {
	for _, tc := range []struct {
		secret string
		ok     bool
		want   string
	}{
		{"", false, "not set"},
		{"short", false, "at least 16"},
		{"0123456789abcdef", true, ""},
		{"0123456789abcdef/x", false, "one URL path segment"},
	} {
		err := Config{PathSecret: tc.secret}.CheckSecret()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckSecret(%q) = %v, want ok=%v containing %q", tc.secret, err, tc.ok, tc.want)
		}
		if err != nil && tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("CheckSecret error repeats the secret: %v", err)
		}
		if err != nil && !strings.Contains(err.Error(), "bridgectl secret") {
			t.Errorf("CheckSecret error does not say how to make one: %v", err)
		}
	}
}

func TestAllowedRootsSplitAndAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	a, b := t.TempDir(), t.TempDir()
	c, err := LoadFrom("", mapEnv(map[string]string{
		"DEEPSEEK_ALLOWED_ROOTS": a + string(os.PathListSeparator) + " " + b + " " + string(os.PathListSeparator),
		"BRIDGE_STATE_DIR":       t.TempDir(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AllowedRoots) != 2 || c.AllowedRoots[0] != a || c.AllowedRoots[1] != b {
		t.Fatalf("AllowedRoots = %q, want [%s %s]", c.AllowedRoots, a, b)
	}
}

// TestMalformedEnvFileQuotesNothing: godotenv's own error quotes the file
// near the mistake; ours names only the line.
func TestMalformedEnvFileQuotesNothing(t *testing.T) {
	const secret = "test-secret-0123456789abcdef"
	tests := []struct {
		name, body string
		line       int
	}{
		{"unterminated quote", "# settings\nPORT=9000\nMCP_PATH_SECRET=\"" + secret + "\nHOST=127.0.0.1\n", 3},
		{"no equals sign", "PORT=9000\nMCP_PATH_SECRET " + secret + "\n", 2},
		{"bad character before a secret", "DEEPSEEK_API_KEY=sk-test-double-key\n@MCP_PATH_SECRET=" + secret + "\nPORT=1\n", 2},
		{"first line", "MCP_PATH_SECRET='" + secret + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "bad.env")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFrom(path, mapEnv(map[string]string{"BRIDGE_STATE_DIR": dir}))
			want := fmt.Sprintf("read %s: not valid .env syntax near line %d (check quotes and variable names)", path, tt.line)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			for _, s := range []string{secret, "sk-test-double-key", "MCP_PATH_SECRET"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error quotes the file (%q): %v", s, err)
				}
			}
		})
	}
}

func TestEnvFileVariable(t *testing.T) {
	dir := t.TempDir()
	t.Run("file in a missing directory is an error naming the variable", func(t *testing.T) {
		path := filepath.Join(dir, "no-such-dir", ".env")
		_, err := LoadFrom("", mapEnv(map[string]string{"BRIDGE_ENV_FILE": path, "BRIDGE_STATE_DIR": dir}))
		if err == nil || !strings.Contains(err.Error(), "BRIDGE_ENV_FILE="+path) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestNamedEnvFileMissing: a .env file named explicitly (--env or
// BRIDGE_ENV_FILE) that does not exist is refused with the path and how to
// create it; LoadMissingOK (for the commands that create it) reads it as
// empty and names it in MissingEnvFile; the default ./.env stays optional.
func TestNamedEnvFileMissing(t *testing.T) {
	dir := t.TempDir()
	later := filepath.Join(dir, "later.env")
	tests := []struct {
		name     string
		explicit string
		env      map[string]string
		want     []string // in LoadFrom's error; nil = no error
	}{
		{"BRIDGE_ENV_FILE", "", map[string]string{"BRIDGE_ENV_FILE": later},
			[]string{"BRIDGE_ENV_FILE=" + later + ": no such file", "`bridgectl secret` creates it", "unset BRIDGE_ENV_FILE"}},
		{"explicit file", later, nil,
			[]string{"env file " + later + ": no such file", "`bridgectl --env " + later + " secret` creates it"}},
		{"explicit file wins over BRIDGE_ENV_FILE", later, map[string]string{"BRIDGE_ENV_FILE": filepath.Join(dir, "other.env")},
			[]string{"env file " + later + ": no such file"}},
		{"default ./.env is optional", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // no ./.env here
			vals := map[string]string{"BRIDGE_STATE_DIR": dir, "MCP_PATH_SECRET": "test-secret-0123456789abcdef"}
			for k, v := range tt.env {
				vals[k] = v
			}
			c, err := LoadFrom(tt.explicit, mapEnv(vals))
			if tt.want == nil {
				if err != nil || c.EnvFile != "" || c.MissingEnvFile != "" {
					t.Fatalf("LoadFrom: err = %v, EnvFile %q, MissingEnvFile %q", err, c.EnvFile, c.MissingEnvFile)
				}
			} else {
				if !errors.Is(err, ErrNoEnvFile) {
					t.Fatalf("LoadFrom: err = %v, want ErrNoEnvFile", err)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
			}
			c, err = LoadMissingOK(tt.explicit, mapEnv(vals))
			wantMissing := ""
			if tt.want != nil {
				wantMissing = later
			}
			if err != nil || c.EnvFile != "" || c.MissingEnvFile != wantMissing || c.PathSecret != "test-secret-0123456789abcdef" {
				t.Fatalf("LoadMissingOK: err = %v, EnvFile %q, MissingEnvFile %q (want %q), PathSecret %q", err, c.EnvFile, c.MissingEnvFile, wantMissing, c.PathSecret)
			}
		})
	}
	t.Run("a directory that does not exist is refused by both", func(t *testing.T) {
		path := filepath.Join(dir, "no-such-dir", ".env")
		for _, load := range []func(string, Lookup) (Config, error){LoadFrom, LoadMissingOK} {
			_, err := load("", mapEnv(map[string]string{"BRIDGE_ENV_FILE": path, "BRIDGE_STATE_DIR": dir}))
			if err == nil || !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("err = %v", err)
			}
		}
	})
}

// TestWideIntegers: values above 32 bits parse the same on every GOARCH.
func TestWideIntegers(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := LoadFrom("", mapEnv(map[string]string{
		"BRIDGE_JOB_MAX_TOKENS": "5000000000",
		"BRIDGE_JOB_TIMEOUT_MS": "86400000000", // 1000 days
		"BRIDGE_DEBUG_ADDR":     "127.0.0.1:0",
		"BRIDGE_STATE_DIR":      t.TempDir(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.JobMaxTokens != 5_000_000_000 || c.JobTimeout != 1000*24*time.Hour || c.DebugAddr != "127.0.0.1:0" {
		t.Fatalf("JobMaxTokens %d JobTimeout %v DebugAddr %q", c.JobMaxTokens, c.JobTimeout, c.DebugAddr)
	}
	_, err = LoadFrom("", mapEnv(map[string]string{"BRIDGE_JOB_TIMEOUT_MS": "1099511627777", "BRIDGE_STATE_DIR": t.TempDir()}))
	if err == nil || !strings.Contains(err.Error(), "from 1 to 1099511627776") {
		t.Fatalf("over the *_MS bound: %v", err)
	}
}

// TestSecretsIncludeBaseURLUserinfo: credentials in a base URL's userinfo are
// secrets like the key, so logs and bridgectl output mask them.
func TestSecretsIncludeBaseURLUserinfo(t *testing.T) {
	tests := []struct {
		name, base, anthropic string
		want                  []string
	}{
		{"none", "https://api.deepseek.com", "", []string{"test-secret-0123456789abcdef", "sk-test-double-key"}},
		{"user and password", "https://alice:pw-0123@proxy.example/v1", "", []string{"test-secret-0123456789abcdef", "sk-test-double-key", "alice:pw-0123"}},
		{"separate anthropic base", "https://a:b-0123@x.example", "http://token-0123@y.example/anthropic",
			[]string{"test-secret-0123456789abcdef", "sk-test-double-key", "a:b-0123", "token-0123"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			c, err := LoadFrom("", mapEnv(map[string]string{
				"MCP_PATH_SECRET": "test-secret-0123456789abcdef", "DEEPSEEK_API_KEY": "sk-test-double-key",
				"DEEPSEEK_BASE_URL": tt.base, "BRIDGE_ANTHROPIC_BASE_URL": tt.anthropic, "BRIDGE_STATE_DIR": t.TempDir(),
			}))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Secrets(); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("Secrets() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAllowedOriginsAreOrigins(t *testing.T) {
	c, err := LoadFrom("", func(k string) (string, bool) {
		if k == "BRIDGE_ALLOWED_ORIGINS" {
			return "HTTPS://ChatGPT.com, http://localhost:6274/", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AllowedOrigins) != 2 || c.AllowedOrigins[0] != "https://chatgpt.com" || c.AllowedOrigins[1] != "http://localhost:6274" {
		t.Fatalf("origins %q", c.AllowedOrigins)
	}
	for _, bad := range []string{"chatgpt.com", "https://chatgpt.com/mcp", "ftp://x.example", "https://u@x.example"} {
		_, err := LoadFrom("", func(k string) (string, bool) {
			if k == "BRIDGE_ALLOWED_ORIGINS" {
				return bad, true
			}
			return "", false
		})
		if err == nil || !strings.Contains(err.Error(), "is not an origin") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// ";" separates roots on every OS, as in the TypeScript bridge, beside the
// OS's own separator.
func TestRootsSplitAtSemicolonsToo(t *testing.T) {
	c, err := LoadFrom("", func(k string) (string, bool) {
		if k == "DEEPSEEK_ALLOWED_ROOTS" {
			return "/srv/a;/srv/b" + string(os.PathListSeparator) + "/srv/c; ", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.AllowedRoots, []string{"/srv/a", "/srv/b", "/srv/c"}) || !c.RootsSemicolon {
		t.Fatalf("roots %q (semicolon %v)", c.AllowedRoots, c.RootsSemicolon)
	}
}

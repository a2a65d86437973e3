package config

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joho/godotenv"
)

var updateExample = flag.Bool("update-example", false, "rewrite ../.env.example from config.Vars")

// requiredVars are left uncommented (and empty) in .env.example.
var requiredVars = map[string]bool{"DEEPSEEK_API_KEY": true, "MCP_PATH_SECRET": true}

// exampleFile renders .env.example from Vars: every variable with its
// meaning and default, commented out except the required ones.
func exampleFile() string {
	var b strings.Builder
	b.WriteString("# deepseek-mcp-bridge configuration. The bridge reads the per-user .env,\n")
	b.WriteString("# ~/.config/deepseek-mcp-bridge/.env ($XDG_CONFIG_HOME/deepseek-mcp-bridge/.env;\n")
	b.WriteString("# --env FILE or BRIDGE_ENV_FILE name another): `bridgectl secret` creates it\n")
	b.WriteString("# with MCP_PATH_SECRET; add DEEPSEEK_API_KEY and whatever else below you change.\n")
	b.WriteString("# Real environment variables win over .env lines. Every other line shows a\n")
	b.WriteString("# variable's default: uncomment it to change it.\n")
	b.WriteString("# This file is checked against config.Vars by config/example_test.go\n")
	b.WriteString("# (go test ./config -run TestEnvExample -update-example rewrites it).\n")
	for _, v := range Vars {
		b.WriteString("\n# " + v.Meaning + "\n")
		if requiredVars[v.Name] {
			b.WriteString("# (required)\n" + v.Name + "=\n")
			continue
		}
		if literalDefault(v.Default) {
			b.WriteString("# " + v.Name + "=" + v.Default + "\n")
		} else {
			b.WriteString("# default: " + v.Default + "\n# " + v.Name + "=\n")
		}
	}
	return b.String()
}

// literalDefault is a default that can be written as the value itself.
func literalDefault(d string) bool {
	return !strings.ContainsAny(d, " $")
}

func TestEnvExample(t *testing.T) {
	path := filepath.Join("..", ".env.example")
	want := exampleFile()
	if *updateExample {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./config -run TestEnvExample -update-example creates it)", err)
	}
	if string(got) != want {
		t.Fatalf(".env.example and config.Vars disagree; run go test ./config -run TestEnvExample -update-example and review the diff.\nwant:\n%s", want)
	}
	// The file as godotenv reads it sets exactly the required variables, empty.
	vals, err := godotenv.UnmarshalBytes(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != len(requiredVars) {
		t.Errorf("uncommented variables %v, want exactly %v", vals, requiredVars)
	}
	for name := range requiredVars {
		if v, ok := vals[name]; !ok || v != "" {
			t.Errorf("%s = %q (present %v), want present and empty", name, v, ok)
		}
	}
	// Every commented line names a variable of Vars, and every variable is there.
	names := map[string]bool{}
	for _, v := range Vars {
		names[v.Name] = true
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(got), "\n") {
		l := strings.TrimPrefix(line, "# ")
		if name, _, ok := strings.Cut(l, "="); ok && !strings.Contains(name, " ") && name == strings.ToUpper(name) {
			if !names[name] {
				t.Errorf(".env.example names %s, which config.Vars does not know", name)
			}
			seen[name] = true
		}
	}
	for n := range names {
		if !seen[n] {
			t.Errorf(".env.example lacks %s", n)
		}
	}
	// Defaults written as values are the ones LoadFrom really uses.
	empty := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	def, err := LoadFrom("", func(k string) (string, bool) {
		if k == "BRIDGE_ENV_FILE" {
			return empty, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"HOST": def.Host, "PORT": itoa(def.Port), "RATE_LIMIT_PER_MINUTE": itoa(def.RateLimitPerMinute),
		"DEEPSEEK_BASE_URL": def.DeepSeekBaseURL, "DEEPSEEK_MODEL": def.Model,
		"DEEPSEEK_TIMEOUT_MS": itoa(int(def.FlashTimeout.Milliseconds())), "DEEPSEEK_MAX_OUTPUT_TOKENS": itoa(def.MaxOutputTokens),
		"BRIDGE_LOG_LEVEL": def.LogLevel, "BRIDGE_MAX_STEPS": itoa(def.MaxSteps), "BRIDGE_JOB_TIMEOUT_MS": itoa(int(def.JobTimeout.Milliseconds())),
		"BRIDGE_APPROVAL_TIMEOUT_MS": itoa(int(def.ApprovalTimeout.Milliseconds())), "BRIDGE_SYNC_WINDOW_MS": itoa(int(def.SyncWindow.Milliseconds())),
		"BRIDGE_MAX_CONCURRENT": itoa(def.MaxConcurrent), "BRIDGE_MAX_QUEUE": itoa(def.MaxQueue),
	}
	for _, v := range Vars {
		if want, ok := checks[v.Name]; ok && v.Default != want {
			t.Errorf("%s: Vars says default %q, LoadFrom uses %q", v.Name, v.Default, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

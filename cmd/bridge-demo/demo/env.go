package demo

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/envfile"
)

// writeUserEnv writes env as the per-user .env under the config home cfgHome
// (mode 0600 in a 0700 dir), where `bridge serve` finds it by default.
func writeUserEnv(cfgHome string, env map[string]string) error {
	path := config.DefaultEnvFile(func(k string) (string, bool) {
		if k == "XDG_CONFIG_HOME" {
			return cfgHome, true
		}
		return "", false
	})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by bridge-demo: the per-user .env of its throwaway config home\n")
	for _, k := range keys {
		b.WriteString(k + "=" + envfile.Quote(env[k]) + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// baseEnv is the part of the demo's own environment the children inherit:
// enough to run, nothing that could carry a real key or secret.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "TMPDIR", "SYSTEMROOT", "USERPROFILE", "LOCALAPPDATA", "APPDATA"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

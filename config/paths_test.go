package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The .env lives in the per-user config dir unless one is named; the table
// is the Linux layout (macOS and Windows take os.UserConfigDir's).
func TestDefaultEnvFileIsPerUser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the table is the Linux layout")
	}
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"}, "/x/cfg/deepseek-mcp-bridge/.env"},
		{"relative XDG_CONFIG_HOME is ignored (the spec says so)", map[string]string{"XDG_CONFIG_HOME": "cfg", "HOME": "/home/u"}, "/home/u/.config/deepseek-mcp-bridge/.env"},
		{"HOME", map[string]string{"HOME": "/home/u"}, "/home/u/.config/deepseek-mcp-bridge/.env"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultEnvFile(mapEnv(tc.env)); got != tc.want {
				t.Errorf("DefaultEnvFile = %s, want %s", got, tc.want)
			}
			if got := ResolveEnvFile("", mapEnv(tc.env)); got != tc.want {
				t.Errorf("ResolveEnvFile = %s, want %s", got, tc.want)
			}
		})
	}
	named := map[string]string{"HOME": "/home/u", "BRIDGE_ENV_FILE": "/etc/b.env"}
	if got := ResolveEnvFile("", mapEnv(named)); got != "/etc/b.env" {
		t.Errorf("BRIDGE_ENV_FILE: got %s", got)
	}
	if got := ResolveEnvFile("/flag.env", mapEnv(named)); got != "/flag.env" {
		t.Errorf("--env over BRIDGE_ENV_FILE: got %s", got)
	}
}

// A ./.env (the TypeScript bridge's place) is read only when named; when it
// is not, the config says so and the per-user file is read.
func TestLocalEnvReadOnlyWhenNamed(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	proj := filepath.Join(dir, "proj")
	for _, d := range []string{filepath.Join(home, ".config", AppDir), proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	homeEnv := filepath.Join(home, ".config", AppDir, ".env")
	write := func(p, secret string) {
		if err := os.WriteFile(p, []byte("MCP_PATH_SECRET="+secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proj, ".env"), "local-secret-0123456789")
	t.Chdir(proj)
	env := map[string]string{"HOME": home, "BRIDGE_STATE_DIR": filepath.Join(dir, "state")}

	c, err := LoadFrom("", mapEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.PathSecret != "" || c.EnvFile != "" {
		t.Errorf("./.env was read without being named: secret %q, env file %q", c.PathSecret, c.EnvFile)
	}
	if want := filepath.Join(proj, ".env"); c.IgnoredLocalEnv != want {
		t.Errorf("IgnoredLocalEnv = %q, want %q", c.IgnoredLocalEnv, want)
	}
	note := LocalEnvNote(c.IgnoredLocalEnv, homeEnv)
	for _, want := range []string{"is not read", homeEnv, "bridgectl doctor --move-env", "--env " + filepath.Join(proj, ".env")} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}

	write(homeEnv, "home-secret-0123456789")
	if c, err = LoadFrom("", mapEnv(env)); err != nil || c.PathSecret != "home-secret-0123456789" || c.EnvFile != homeEnv {
		t.Errorf("per-user file: secret %q, file %q, err %v", c.PathSecret, c.EnvFile, err)
	}

	for name, load := range map[string]func() (Config, error){
		"--env .env": func() (Config, error) { return LoadFrom(".env", mapEnv(env)) },
		"BRIDGE_ENV_FILE=.env": func() (Config, error) {
			return LoadFrom("", mapEnv(map[string]string{"HOME": home, "BRIDGE_ENV_FILE": ".env"}))
		},
	} {
		c, err := load()
		if err != nil || c.PathSecret != "local-secret-0123456789" || c.IgnoredLocalEnv != "" {
			t.Errorf("%s: secret %q, ignored %q, err %v", name, c.PathSecret, c.IgnoredLocalEnv, err)
		}
	}
}

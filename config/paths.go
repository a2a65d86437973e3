package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// AppDir is the name of the bridge's per-user directories.
const AppDir = "deepseek-mcp-bridge"

// LocalEnvFile is the name of a .env file in the current directory: the
// TypeScript bridge's place for it, read here only when named.
const LocalEnvFile = ".env"

// UserConfigDir is the per-user config directory of the bridge:
// $XDG_CONFIG_HOME/deepseek-mcp-bridge, else the OS's (os.UserConfigDir:
// ~/.config on Linux, ~/Library/Application Support on macOS, %AppData% on
// Windows) with deepseek-mcp-bridge under it.
func UserConfigDir(env Lookup) string {
	if v, ok := env("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, AppDir)
	}
	home, _ := env("HOME")
	switch runtime.GOOS {
	case "windows":
		if v, ok := env("AppData"); ok && v != "" {
			return filepath.Join(v, AppDir)
		}
	case "darwin":
		if home != "" {
			return filepath.Join(home, "Library", "Application Support", AppDir)
		}
	default:
		if home != "" {
			return filepath.Join(home, ".config", AppDir)
		}
	}
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, AppDir)
	}
	return filepath.Join(os.TempDir(), AppDir+"-config") // no home at all: say where, never the working dir
}

// DefaultEnvFile is the .env the bridge reads when none is named: .env in
// UserConfigDir.
func DefaultEnvFile(env Lookup) string { return filepath.Join(UserConfigDir(env), ".env") }

// ResolveEnvFile picks the .env file: the explicit one (--env), then
// BRIDGE_ENV_FILE, then DefaultEnvFile. A ./.env in the working directory is
// never picked unless named (IgnoredLocalEnv reports one).
func ResolveEnvFile(explicit string, env Lookup) string {
	if explicit != "" {
		return explicit
	}
	if v, ok := env("BRIDGE_ENV_FILE"); ok && v != "" {
		return v
	}
	return DefaultEnvFile(env)
}

// ignoredLocalEnv is ./.env (absolute) when it exists and is neither the file
// read (used) nor the missing one named (missing); "" otherwise.
func ignoredLocalEnv(used, missing string) string {
	abs, err := filepath.Abs(LocalEnvFile)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(abs)
	if err != nil || fi.IsDir() {
		return ""
	}
	for _, p := range []string{used, missing} {
		if p != "" && SameFile(p, abs) {
			return ""
		}
	}
	return abs
}

// SameFile reports whether a and b name the same file (after symlinks; by
// path when either does not exist).
func SameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	absA, _ := filepath.Abs(a)
	absB, _ := filepath.Abs(b)
	return absA == absB
}

// LocalEnvNote is what every command says when a ./.env exists but is not
// read (Config.IgnoredLocalEnv): where the settings come from instead, and
// the two ways to use the file.
func LocalEnvNote(ignored, used string) string {
	return ignored + " is not read: the bridge reads " + used + " unless --env or BRIDGE_ENV_FILE names another file" +
		" — `bridgectl doctor --move-env` moves it there, or pass `--env " + ignored + "`"
}

// DefaultStateDir is the per-user state directory: $XDG_STATE_HOME/deepseek-mcp-bridge,
// ~/.local/state/deepseek-mcp-bridge, or the OS config dir on macOS and Windows.
func DefaultStateDir(env Lookup) string {
	if v, ok := env("XDG_STATE_HOME"); ok && v != "" {
		return filepath.Join(v, AppDir)
	}
	home, _ := os.UserHomeDir()
	switch runtime.GOOS {
	case "windows", "darwin":
		if dir, err := os.UserConfigDir(); err == nil {
			return filepath.Join(dir, AppDir, "state")
		}
	}
	return filepath.Join(home, ".local", "state", AppDir)
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/envfile"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Which .env a command acts on. The running daemon's file wins over what
// this directory and environment would pick, so that status, rotate, reload
// and stop act on the daemon from anywhere; --env or BRIDGE_ENV_FILE naming
// another file still wins, with a note. Every pick that differs from the
// default is said on stderr.

// envPick is what loadWith found out about the .env files.
type envPick struct {
	explicit  bool   // --env or BRIDGE_ENV_FILE named the file
	picked    string // what --env, BRIDGE_ENV_FILE or the per-user default gives
	daemon    string // the running daemon's file (daemon.json), "" when none runs or it read none
	daemonPID int
}

// runningDaemonEnv is the .env the daemon of stateDir was started with and
// its pid ("", 0 when no daemon holds the state dir's lock).
func runningDaemonEnv(stateDir string) (string, int) {
	dir := statedir.Dir{Root: stateDir}
	if !dir.Exists() {
		return "", 0
	}
	s := (&daemonctl.Controller{Dir: dir}).Find()
	if s.PID == 0 || s.Info == nil {
		return "", 0
	}
	return s.Info.EnvFile, s.PID
}

// stateDirOf is the state dir the configuration names, or, when the .env
// cannot be read, the one the environment names (else the per-user one):
// where to look for a running daemon.
func stateDirOf(cfg config.Config, err error, env config.Lookup) string {
	if err == nil {
		return cfg.StateDir
	}
	if v, ok := env("BRIDGE_STATE_DIR"); ok && v != "" {
		if abs, aerr := filepath.Abs(v); aerr == nil {
			return abs
		}
		return v
	}
	return config.DefaultStateDir(env)
}

// pickEnv loads the configuration the command acts on; see the comment above.
func (f *flags) pickEnv(loadConfig func(string, config.Lookup) (config.Config, error)) (config.Config, envPick, error) {
	e := f.e
	_, named := e.Getenv("BRIDGE_ENV_FILE")
	p := envPick{explicit: f.env != "" || named, picked: config.ResolveEnvFile(f.env, e.Getenv)}
	cfg, err := loadConfig(f.env, e.Getenv)
	p.daemon, p.daemonPID = runningDaemonEnv(stateDirOf(cfg, err, e.Getenv))
	if p.daemon == "" || config.SameFile(p.daemon, p.picked) {
		return cfg, p, err
	}
	if p.explicit {
		if f.quiet {
			return cfg, p, err
		}
		fmt.Fprintf(e.Stderr, "note: the running daemon (pid %d) was started with %s; this command uses %s, which --env or BRIDGE_ENV_FILE names\n", p.daemonPID, p.daemon, p.picked)
		return cfg, p, err
	}
	if _, serr := os.Stat(p.daemon); serr != nil {
		fmt.Fprintf(e.Stderr, "note: the running daemon (pid %d) was started with %s, which is gone (%v); this command uses %s\n", p.daemonPID, p.daemon, errText(serr), p.picked)
		return cfg, p, err
	}
	fmt.Fprintf(e.Stderr, "note: acting on the running daemon's .env %s (pid %d), not %s\n", p.daemon, p.daemonPID, p.picked)
	f.env = p.daemon
	p.picked = p.daemon
	cfg, err = loadConfig(f.env, e.Getenv)
	return cfg, p, err
}

// setEnv writes KEY=value into the .env the command acts on. The per-user
// file's directory is created (mode 0700) on a first run; any other file's
// directory must exist (a mistyped --env is not a directory to create).
func (c *ctl) setEnv(key, value string) error {
	if config.SameFile(c.envPath, config.DefaultEnvFile(c.e.Getenv)) {
		if err := os.MkdirAll(filepath.Dir(c.envPath), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(c.envPath), err)
		}
	}
	return envfile.Set(c.envPath, key, value)
}

// envChanged reports whether the running daemon d started before the .env
// file was last written: it then serves older settings (a rotated secret,
// other roots) than the file shows.
func (c *ctl) envChanged(d daemonctl.Status) bool {
	return d.PID != 0 && d.Info != nil && envChangedSince(c.envPath, d.Info.StartedAt)
}

// envChangedNote is what status, url and smoke say when envChanged.
func envChangedNote(envFile string) string {
	return envFile + " changed after the daemon started: it still serves the old settings (secret, roots, ...) — `bridgectl reload`"
}

// envChangedSince reports whether the .env file at path was modified in a
// later second than startedAt (RFC 3339, whole seconds, as daemon.json has it).
func envChangedSince(path, startedAt string) bool {
	start, err := time.Parse(time.RFC3339, startedAt)
	if err != nil {
		return false
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	return fi.ModTime().Truncate(time.Second).After(start)
}

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
)

// moveLocalEnv is doctor --move-env: ./.env (the TypeScript bridge's place)
// becomes the per-user .env, mode 0600, unless that exists already (then
// nothing moves: two files to merge are the owner's call).
func moveLocalEnv(e *Env, explicit string) error {
	if explicit != "" {
		return usageError{"doctor --move-env moves ./.env to the per-user .env; it does not take --env"}
	}
	src, err := filepath.Abs(config.LocalEnvFile)
	if err != nil {
		return err
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("no %s to move (run it in the folder that holds the .env)", src)
	}
	dst := config.DefaultEnvFile(e.Getenv)
	if v, ok := e.Getenv("BRIDGE_ENV_FILE"); ok && v != "" {
		dst = v
	}
	if config.SameFile(src, dst) {
		return fmt.Errorf("%s is already the .env the bridge reads", src)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists already: merge %s into it by hand (both may hold a key), then remove %s", dst, src, src)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	// Written, not renamed: the config dir may be on another filesystem, and
	// the copy must be 0600 whatever the old file's mode was.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(dst)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(dst)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Remove(src); err != nil {
		return fmt.Errorf("copied %s to %s, but could not remove it (%v): remove it yourself", src, dst, err)
	}
	fmt.Fprintf(e.Stdout, "moved %s to %s (mode 0600): every bridge and bridgectl command reads it from any folder\n", src, dst)
	return nil
}

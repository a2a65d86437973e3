package daemonctl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Bridge is the bridge binary a start runs: Bin when set, else FindBridge.
func (c *Controller) Bridge() (string, error) {
	if c.Bin != "" {
		return c.Bin, nil
	}
	return FindBridge(c.Environ, c.Exe)
}

// FindBridge locates the daemon binary: BRIDGE_BIN of environ, else
// `bridge` next to exe (bridgectl's own executable), else on environ's PATH
// — but only a `bridge` that says it is this one.
func FindBridge(environ []string, exe string) (string, error) {
	if v, ok := lookupEnv(environ, "BRIDGE_BIN"); ok && v != "" {
		if _, err := os.Stat(v); err != nil {
			return "", fmt.Errorf("BRIDGE_BIN=%s: %w", v, err)
		}
		return v, nil
	}
	if exe != "" {
		for _, ext := range exeExts() {
			p := filepath.Join(filepath.Dir(exe), "bridge"+ext)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
	}
	path, _ := lookupEnv(environ, "PATH")
	if p, err := LookPath(path, "bridge"); err == nil {
		// Linux has another `bridge` on PATH (iproute2's, /sbin/bridge):
		// take one only when it says it is this one.
		if out, err := exec.Command(p, "version").Output(); err == nil && strings.HasPrefix(string(out), "bridge ") && strings.Count(string(out), "\n") == 1 {
			return p, nil
		}
		return "", fmt.Errorf("the `bridge` on PATH (%s) is not the DeepSeek MCP bridge (iproute2 has one too), and none is next to bridgectl: run `make build` (it writes bin/bridge) or set BRIDGE_BIN", p)
	}
	return "", errors.New("the `bridge` binary was not found next to bridgectl or on PATH: run `make build` (it writes bin/bridge) or set BRIDGE_BIN")
}

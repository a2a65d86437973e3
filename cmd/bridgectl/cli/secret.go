package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/ids"
)

var secretCmd = &Command{
	Name:  "secret",
	Usage: "secret [--show]",
	Short: "write a new MCP_PATH_SECRET (32 random bytes, hex) into .env",
	Long: `Generates 32 random bytes (crypto/rand), writes them as 64 hex characters to
MCP_PATH_SECRET in the .env file (created with mode 0600 if missing), and keeps
every other line and comment of the file as it was. Prints the secret masked;
--show prints it in full. A running daemon keeps the old secret until
` + "`bridgectl reload`" + ` — ` + "`bridgectl rotate`" + ` does both.`,
	Run: runSecret,
}

func runSecret(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoadCreatingEnv(e, args, true)
	if err != nil {
		return err
	}
	s, err := c.writeSecret()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "new secret written to %s: %s\n", c.envPath, s)
	if d := c.daemon(ctx); d.PID != 0 {
		fmt.Fprintln(e.Stdout, "the running daemon still serves the old secret: run `bridgectl reload` (or use `bridgectl rotate`, which does both)")
	}
	return nil
}

// newSecret is a fresh MCP path secret: 256 bits as 64 hex characters.
func newSecret() (string, error) { return ids.Hex(32) }

// writeSecret puts a fresh secret into .env and re-reads the config.
func (c *ctl) writeSecret() (string, error) {
	s, err := newSecret()
	if err != nil {
		return "", err
	}
	c.e.mask.add(s)
	if err := c.setEnv("MCP_PATH_SECRET", s); err != nil {
		return "", err
	}
	if c.overriddenByEnv("MCP_PATH_SECRET") {
		fmt.Fprintln(c.e.Stderr, "warning: MCP_PATH_SECRET is also set in the environment, which wins over .env: unset it, or the new secret has no effect")
	}
	if err := c.reread(); err != nil {
		return "", err
	}
	return s, nil
}

// reread loads the config again after .env changed.
func (c *ctl) reread() error {
	envFlag := ""
	if _, err := os.Stat(c.envPath); err == nil {
		envFlag = c.envPath
	}
	f := &flags{e: c.e, env: envFlag, quiet: true}
	n, err := f.load()
	if err != nil {
		return err
	}
	*c = *n
	return nil
}

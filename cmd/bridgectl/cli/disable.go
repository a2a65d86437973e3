package cli

import (
	"context"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

var disableCmd = &Command{
	Name:  "disable",
	Usage: "disable",
	Short: "stop everything and refuse `bridgectl start` until `bridgectl enable`",
	Long: `Writes <state>/disabled, then stops the tunnel and the daemon. While the flag
exists, ` + "`bridgectl start`" + `, ` + "`restart`" + ` and the systemd unit's start (which runs
` + "`bridgectl start --foreground`" + `) refuse. A kill switch for when you are away.
Unfinished agent jobs end as interrupted; disable names them.`,
	Run: runDisable,
}

func runDisable(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	if err := c.createDir(); err != nil {
		return err
	}
	if err := statedir.WriteFileAtomic(c.dir.DisabledFlag(), []byte("disabled by bridgectl at "+e.Now().UTC().Format("2006-01-02T15:04:05Z")+"\n")); err != nil {
		return err
	}
	if err := c.stopAll(ctx); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, "disabled: `bridgectl enable` to allow starts again")
	return nil
}

// disabled reports whether `bridgectl disable` has set the flag file.
func (c *ctl) disabled() bool { return c.control().Disabled() }
